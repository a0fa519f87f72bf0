// Random tensor factories over the counter-based generator.
#include "loom/tensor/random.h"

#include <mutex>

#include "loom/tensor/primitives.h"

namespace loom {

namespace {
std::mutex generator_mutex;  // guards the process-wide generator; a thread's own needs none
thread_local Generator* thread_generator = nullptr;

Generator& process_generator() {
  static Generator generator(0x10011001ull);
  return generator;
}

Tensor random_tensor(const Shape& shape, const TensorOptions& options, Generator* gen,
                     detail::RandomParams params) {
  Tensor t = empty(shape, options.requires_grad(false));
  const uint64_t n = static_cast<uint64_t>(t.numel());
  if (!gen) gen = thread_generator;
  if (gen) {
    params.seed = gen->seed();
    params.offset = gen->advance(n);
  } else {
    std::lock_guard<std::mutex> lock(generator_mutex);
    params.seed = process_generator().seed();
    params.offset = process_generator().advance(n);
  }
  detail::fill_random(t, params);
  if (options.requires_grad_) t.set_requires_grad(true);
  return t;
}
}  // namespace

Generator& default_generator() {
  return thread_generator ? *thread_generator : process_generator();
}

void manual_seed(uint64_t seed) {
  if (thread_generator) return thread_generator->set_state(seed, 0);
  std::lock_guard<std::mutex> lock(generator_mutex);
  process_generator().set_state(seed, 0);
}

GeneratorGuard::GeneratorGuard(Generator& generator) : previous_(thread_generator) {
  thread_generator = &generator;
}

GeneratorGuard::~GeneratorGuard() { thread_generator = previous_; }

Tensor rand(const Shape& shape, const TensorOptions& options, Generator* gen) {
  return uniform(shape, 0.0, 1.0, options, gen);
}

Tensor uniform(const Shape& shape, double low, double high, const TensorOptions& options,
               Generator* gen) {
  LOOM_CHECK(is_floating(options.dtype_), "uniform: needs a floating dtype, got ",
             dtype_name(options.dtype_));
  LOOM_CHECK(low < high, "uniform: low ", low, " must be below high ", high);
  return random_tensor(shape, options, gen, {detail::RandomKind::Uniform, low, high});
}

Tensor randn(const Shape& shape, const TensorOptions& options, Generator* gen) {
  LOOM_CHECK(is_floating(options.dtype_), "randn: needs a floating dtype, got ",
             dtype_name(options.dtype_));
  return random_tensor(shape, options, gen, {detail::RandomKind::Normal, 0.0, 1.0});
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& options,
               Generator* gen) {
  LOOM_CHECK(low < high, "randint: low ", low, " must be below high ", high);
  return random_tensor(
      shape, options, gen,
      {detail::RandomKind::Integer, static_cast<double>(low), static_cast<double>(high)});
}

}  // namespace loom
