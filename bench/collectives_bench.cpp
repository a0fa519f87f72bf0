// Collective bandwidth of loom's process groups, measured and reported as nccl-tests does: per
// size, the time of one collective, its algorithm and bus bandwidth, and a #wrong count.
//   collectives_bench --op all_reduce|broadcast|all_gather|reduce_scatter --sizes 8B:256MB
//                     --backend nccl|threads|mpi|tcp [--world-size N] [--device cpu|cuda[:k]]
//                     [--dtype float32|float64|int64|int32|uint8] [--iters 20] [--warmup 5]
//                     [--json]
// Definitions (nccl-tests doc/PERFORMANCE.md), with n ranks:
//   size  = the larger buffer of one rank in bytes (all_gather: its output, reduce_scatter: its
//           input); count = the collective's per-rank element count (all_gather: the input,
//           reduce_scatter: the output), so all_gather/reduce_scatter sizes round down to n |
//           count.
//   time  = the slowest rank's average over --iters collectives, after --warmup untimed ones.
//   algbw = size / time;  busbw = algbw * factor, factor = 2(n-1)/n (all_reduce),
//           (n-1)/n (all_gather, reduce_scatter), 1 (broadcast): the bytes each rank's link
//           carries, comparable with the hardware's bandwidth whatever n is.
//   #wrong = elements, summed over ranks, that differ from the closed-form answer after one more
//           collective on inputs valued by rank: rank r's element i is (r + 1) * (i % 7 + 1).
#include <loom/loom.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace dist = loom::dist;
using loom::DType;
using loom::Tensor;
using loom::TensorOptions;

namespace {

enum class Op { AllReduce, Broadcast, AllGather, ReduceScatter };

struct Config {
  Op op = Op::AllReduce;
  std::string op_name, backend_name, device_spec, dtype_name;
  DType dtype = loom::kFloat32;
  std::vector<int64_t> sizes;
  int iters = 20, warmup = 5;
  bool json = false;
  std::string gpu_list, topology;  // from nvidia-smi, empty without it
};

// A command's standard output, "" when it fails or is missing (nvidia-smi on a CPU machine).
std::string command_output(const std::string& command) {
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (!pipe) return "";
  std::string out;
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, got);
  return pclose(pipe) == 0 ? out : "";
}

// "8", "8B", "64K", "1MB", "2GiB" (binary multiples, as nccl-tests reads -b/-e) to bytes.
int64_t parse_bytes(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 12)
    throw CLI::ValidationError("--sizes", "'" + text + "' is not a byte count");
  std::string unit;
  for (char c : text.substr(digits))
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit == "" || unit == "b") shift = 0;
  if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
  if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
  if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
  if (shift < 0) {
    throw CLI::ValidationError("--sizes", "'" + text + "' has unit '" + text.substr(digits) +
                                              "'; expected B, K, M or G (KB, MiB, ... too)");
  }
  const int64_t bytes = std::stoll(text.substr(0, digits)) << shift;
  if (bytes < 1 || bytes > (int64_t{64} << 30)) {
    throw CLI::ValidationError("--sizes", "'" + text + "' is outside 1 B .. 64 GiB");
  }
  return bytes;
}

// "MIN:MAX" doubling from MIN while not above MAX, or one size.
std::vector<int64_t> parse_sizes(const std::string& spec) {
  const size_t colon = spec.find(':');
  const int64_t lo = parse_bytes(spec.substr(0, colon));
  const int64_t hi = colon == std::string::npos ? lo : parse_bytes(spec.substr(colon + 1));
  if (hi < lo)
    throw CLI::ValidationError("--sizes", "'" + spec + "': the largest size is below the smallest");
  std::vector<int64_t> sizes;
  for (int64_t s = lo; s <= hi; s *= 2) sizes.push_back(s);
  return sizes;
}

double bus_factor(Op op, int n) {
  switch (op) {
    case Op::AllReduce:
      return 2.0 * (n - 1) / n;
    case Op::AllGather:
    case Op::ReduceScatter:
      return static_cast<double>(n - 1) / n;
    case Op::Broadcast:
      return 1.0;
  }
  return 1.0;
}

// A host tensor of n elements, element i = (r + 1) * ((first + i) % 7 + 1), made in int64 and
// converted: exact in every dtype, and uint8 wraps just as the collective's own sums do.
Tensor rank_values(int64_t n, DType dtype, int rank, int64_t first) {
  Tensor t = loom::empty({n}, TensorOptions(dtype));
  LOOM_DISPATCH_ALL(dtype, "rank_values", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<scalar_t>((rank + 1) * ((first + i) % 7 + 1));
  });
  return t;
}

// The closed-form answer at output element j of rank `rank` over `world` ranks, `count` the
// per-rank count: sums are (j % 7 + 1) * world(world+1)/2, broadcast (root 0) gives rank 0's
// values, all_gather puts rank j / count's element j % count at j.
int64_t expected(Op op, int world, int rank, int64_t count, int64_t j) {
  const int64_t ranks_sum = int64_t{world} * (world + 1) / 2;
  switch (op) {
    case Op::AllReduce:
      return (j % 7 + 1) * ranks_sum;
    case Op::Broadcast:
      return j % 7 + 1;
    case Op::AllGather:
      return (j / count + 1) * (j % count % 7 + 1);
    case Op::ReduceScatter:
      return ((rank * count + j) % 7 + 1) * ranks_sum;
  }
  return 0;
}

int64_t count_wrong(const Tensor& result, Op op, int world, int rank, int64_t count) {
  const Tensor host = result.cpu();
  return LOOM_DISPATCH_ALL(host.dtype(), "count_wrong", [&] {
    const scalar_t* p = host.data_ptr<scalar_t>();
    int64_t wrong = 0;
    for (int64_t j = 0; j < host.numel(); ++j) {
      wrong += p[j] != static_cast<scalar_t>(expected(op, world, rank, count, j));
    }
    return wrong;
  });
}

// One value reduced over the ranks through the group itself (outside any timed region).
double reduce_scalar(dist::ProcessGroup& g, double value, DType dtype, dist::ReduceOp op) {
  Tensor t = loom::full({1}, value, TensorOptions(dtype).device(g.device()));
  g.all_reduce(t, op)->wait();
  return t.item<double>();
}

struct Row {
  int64_t bytes = 0, count = 0, wrong = 0;
  double time_us = 0, algbw = 0, busbw = 0;
};

// The reduction timed: sum, or max for integers, whose repeated in-place sums would overflow.
dist::ReduceOp timed_op(DType dtype) { return loom::is_floating(dtype) ? dist::ReduceOp::Sum : dist::ReduceOp::Max; }

// Times `size` bytes of the collective on this rank, then checks one run on rank values. Every
// rank calls it with the same arguments; rows are the same on every rank.
Row measure(dist::ProcessGroup& g, const Config& cfg, int64_t size) {
  const int n = g.size();
  const int64_t elt = static_cast<int64_t>(loom::element_size(cfg.dtype));
  const bool split = cfg.op == Op::AllGather || cfg.op == Op::ReduceScatter;
  const int64_t total = split ? size / elt / n * n : size / elt;  // elements of the larger buffer
  Row row;
  row.count = split ? total / n : total;
  row.bytes = total * elt;
  if (total == 0) return row;

  const TensorOptions on_device = TensorOptions(cfg.dtype).device(g.device());
  // all_reduce and broadcast work in place on `in`; the others write `out`.
  const int64_t in_numel = cfg.op == Op::AllGather ? row.count : total;
  // Timed on rank values, never zeros. Repeated in-place sums multiply them by the world size
  // each time: floats may reach inf (which costs what any value costs), but integers would
  // overflow (undefined in the CPU loops), so integer dtypes are timed with max, which moves
  // and combines the same bytes (see timed_op).
  Tensor in = rank_values(in_numel, cfg.dtype, g.rank(), 0).to(g.device());
  Tensor out;
  if (cfg.op == Op::AllGather) out = loom::empty({total}, on_device);
  if (cfg.op == Op::ReduceScatter) out = loom::empty({row.count}, on_device);
  auto issue = [&](dist::ReduceOp op) -> dist::WorkPtr {
    switch (cfg.op) {
      case Op::AllReduce:
        return g.all_reduce(in, op);
      case Op::Broadcast:
        return g.broadcast(in, 0);
      case Op::AllGather:
        return g.all_gather(out, in);
      case Op::ReduceScatter:
        return g.reduce_scatter(out, in, op);
    }
    return nullptr;
  };

  // wait_stream() is wait() on the CPU; on a GPU it orders the rank's stream after the
  // collective without blocking the host, so iterations pipeline as nccl-tests' do.
  for (int i = 0; i < cfg.warmup; ++i) issue(timed_op(cfg.dtype))->wait_stream();
  const bool on_gpu = g.device().is_cuda();
  const int d = g.device().index;
  if (on_gpu) loom::cuda::synchronize_stream(loom::cuda::current_stream(d));
  g.barrier()->wait();  // every rank starts its clock together
  double us = 0;
  if (on_gpu) {
    const loom::cuda::StreamHandle stream = loom::cuda::current_stream(d);
    loom::cuda::Event start(d), stop(d);
    start.record(stream);
    for (int i = 0; i < cfg.iters; ++i) issue(timed_op(cfg.dtype))->wait_stream();
    stop.record(stream);
    stop.synchronize();
    us = 1e3 * loom::cuda::Event::elapsed_ms(start, stop) / cfg.iters;
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < cfg.iters; ++i) issue(timed_op(cfg.dtype))->wait_stream();
    us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         cfg.iters;
  }
  row.time_us = reduce_scalar(g, us, loom::kFloat64, dist::ReduceOp::Max);
  row.algbw = static_cast<double>(row.bytes) / (row.time_us * 1e-6) / 1e9;
  row.busbw = row.algbw * bus_factor(cfg.op, n);

  // The check: rank values in, outputs poisoned with 0, which no answer equals below 64 ranks
  // (uint8's wrapped answers reach 0 from there).
  in.copy_(rank_values(in_numel, cfg.dtype, g.rank(), 0));
  if (out.defined()) out.fill_(0.0);
  issue(dist::ReduceOp::Sum)->wait();  // the closed form is the sum's
  const int64_t mine = count_wrong(out.defined() ? out : in, cfg.op, n, g.rank(), row.count);
  row.wrong = static_cast<int64_t>(
      reduce_scalar(g, static_cast<double>(mine), loom::kInt64, dist::ReduceOp::Sum));
  return row;
}

std::string now_string() {
  const std::time_t t = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S %z", std::localtime(&t));
  return text;
}

std::string device_words(const dist::ProcessGroup& g) {
  if (g.device().is_cpu()) return "cpu";
  if (std::string(g.backend()) == "threads") {
    return g.device().str() + " (all " + std::to_string(g.size()) + " ranks share it)";
  }
  return "cuda:<local rank> (one GPU per rank; rank 0 on " + g.device().str() + ")";
}

void print_setup(const dist::ProcessGroup& g, const Config& cfg) {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  std::printf("# loom collectives_bench: %s%s, %s, %zu sizes from %lld to %lld B (factor 2)\n",
              cfg.op_name.c_str(),
              cfg.op == Op::AllReduce || cfg.op == Op::ReduceScatter ? " (sum)" : "",
              cfg.dtype_name.c_str(), cfg.sizes.size(), static_cast<long long>(cfg.sizes.front()),
              static_cast<long long>(cfg.sizes.back()));
  std::printf("# backend %s, world size %d, device %s, host %s\n", g.backend(), g.size(),
              device_words(g).c_str(), host);
  std::printf("# NCCL %s, CUDA devices visible %d\n", dist::nccl_version().c_str(),
              loom::cuda_device_count());
  if (g.device().is_cuda()) {
    std::string line;
    for (const std::string* block : {&cfg.gpu_list, &cfg.topology}) {
      for (char c : *block) {
        if (c != '\n') {
          line += c;
          continue;
        }
        std::printf("#   %s\n", line.c_str());
        line.clear();
      }
    }
  }
  std::printf("# iters %d, warmup %d, %s\n", cfg.iters, cfg.warmup, now_string().c_str());
  std::printf(
      "# time: the slowest rank's average over iters (%s); algbw = size / time; "
      "busbw = algbw * %.4f\n",
      g.device().is_cuda() ? "CUDA events on each rank's stream" : "steady_clock, each waited",
      bus_factor(cfg.op, g.size()));
  std::printf(
      "# #wrong: elements (summed over ranks) differing from the closed form, inputs "
      "(r+1)*(i%%7+1)\n");
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s\n", "size", "count", "type", "redop",
              "root", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)", "");
}

void print_row(const dist::ProcessGroup& g, const Config& cfg, const Row& r) {
  const bool reduces = cfg.op == Op::AllReduce || cfg.op == Op::ReduceScatter;
  const int root = cfg.op == Op::Broadcast ? 0 : -1;
  if (cfg.json) {
    std::printf(
        "{\"framework\": \"loom\", \"backend\": \"%s\", \"world_size\": %d, \"device\": \"%s\", "
        "\"nccl\": \"%s\", \"op\": \"%s\", \"dtype\": \"%s\", \"redop\": \"%s\", \"root\": %d, "
        "\"size_bytes\": %lld, \"count\": %lld, \"time_us\": %.3f, \"algbw_gbps\": %.4f, "
        "\"busbw_gbps\": %.4f, \"wrong\": %lld, \"iters\": %d, \"warmup\": %d}\n",
        g.backend(), g.size(), g.device().str().c_str(), dist::nccl_version().c_str(),
        cfg.op_name.c_str(), cfg.dtype_name.c_str(), reduces ? dist::reduce_op_name(timed_op(cfg.dtype)) : "none", root,
        static_cast<long long>(r.bytes), static_cast<long long>(r.count), r.time_us, r.algbw,
        r.busbw, static_cast<long long>(r.wrong), cfg.iters, cfg.warmup);
  } else {
    std::printf("%12lld  %12lld  %8s  %6s  %6d  %9.2f  %7.2f  %7.2f  %6lld\n",
                static_cast<long long>(r.bytes), static_cast<long long>(r.count),
                cfg.dtype_name.c_str(), reduces ? dist::reduce_op_name(timed_op(cfg.dtype)) : "none", root, r.time_us, r.algbw, r.busbw,
                static_cast<long long>(r.wrong));
  }
  std::fflush(stdout);
}

// The sweep on one rank; rank 0 prints. Returns the total #wrong.
int64_t sweep(dist::ProcessGroup& g, const Config& cfg) {
  const bool printer = g.rank() == 0;
  if (printer && !cfg.json) print_setup(g, cfg);
  int64_t wrong = 0, rows = 0;
  double busbw_sum = 0;
  for (int64_t size : cfg.sizes) {
    const Row r = measure(g, cfg, size);
    if (r.count == 0) continue;  // below one element per rank: nothing to move
    wrong += r.wrong;
    busbw_sum += r.busbw;
    ++rows;
    if (printer) print_row(g, cfg, r);
  }
  if (printer && !cfg.json) {
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
                wrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %.4f GB/s over %lld sizes\n#\n",
                rows ? busbw_sum / static_cast<double>(rows) : 0.0, static_cast<long long>(rows));
  }
  return wrong;
}

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "collectives_bench: %s\n", message.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loom collective-communication benchmark (nccl-tests style)"};
  Config cfg;
  cfg.op_name = "all_reduce";
  cfg.backend_name = "threads";
  cfg.dtype_name = "float32";
  std::string sizes_spec = "8B:256MB";
  int world_size = 0;
  app.add_option("--op", cfg.op_name, "collective")
      ->check(CLI::IsMember({"all_reduce", "broadcast", "all_gather", "reduce_scatter"}));
  app.add_option("--sizes", sizes_spec, "MIN:MAX in bytes (B/K/M/G), doubling; or one size");
  app.add_option("--backend", cfg.backend_name)
      ->check(CLI::IsMember({"nccl", "threads", "mpi", "tcp"}));
  app.add_option("--world-size", world_size,
                 "ranks (threads: threads of this process; nccl: GPUs); default: the launcher's "
                 "world, else 1")
      ->check(CLI::Range(1, 4096));
  app.add_option("--device", cfg.device_spec, "cpu or cuda[:k]; default cuda for nccl, else cpu");
  app.add_option("--dtype", cfg.dtype_name)
      ->check(CLI::IsMember({"float32", "float64", "int64", "int32", "uint8"}));
  app.add_option("--iters", cfg.iters)->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", cfg.warmup)->check(CLI::Range(0, 1000000));
  app.add_flag("--json", cfg.json, "one JSON object per row instead of the table");
  CLI11_PARSE(app, argc, argv);

  const Op ops[] = {Op::AllReduce, Op::Broadcast, Op::AllGather, Op::ReduceScatter};
  const char* op_names[] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter"};
  for (int i = 0; i < 4; ++i) {
    if (cfg.op_name == op_names[i]) cfg.op = ops[i];
  }
  const DType dtypes[] = {loom::kFloat32, loom::kFloat64, loom::kInt64, loom::kInt32, loom::kUInt8};
  for (DType d : dtypes) {
    if (cfg.dtype_name == loom::dtype_name(d)) cfg.dtype = d;
  }
  try {
    cfg.sizes = parse_sizes(sizes_spec);
  } catch (const CLI::Error& e) {
    usage_error(e.what());
  }

  try {
    const dist::Backend backend = dist::parse_backend(cfg.backend_name);
    if (!dist::backend_available(backend)) {
      usage_error(
          "loom was built without the " + cfg.backend_name + " backend" +
          (backend == dist::Backend::Nccl ? " (configure with CUDA)" : " (configure with MPI)"));
    }
    if (cfg.device_spec.empty()) cfg.device_spec = backend == dist::Backend::Nccl ? "cuda" : "cpu";
    loom::Device device;
    try {
      device = loom::Device(cfg.device_spec);
    } catch (const loom::Error& e) {
      usage_error(std::string("--device: ") + e.what());
    }
    if (device.is_cuda() && !loom::built_with_cuda())
      usage_error("--device " + cfg.device_spec + ": loom was built without CUDA");
    if (backend == dist::Backend::Nccl && !device.is_cuda())
      usage_error("--backend nccl needs --device cuda");
    if ((backend == dist::Backend::Mpi || backend == dist::Backend::Tcp) && !device.is_cpu()) {
      usage_error("--backend " + cfg.backend_name +
                  " takes CPU tensors: use --device cpu (or nccl for GPUs)");
    }
    if (device.is_cuda()) {
      cfg.gpu_list =
          command_output("nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader");
      cfg.topology = command_output("nvidia-smi topo -m");
    }

    const dist::LaunchEnvironment env = dist::read_launch_environment();
    const bool launched = env.launcher != "none";
    // Ranks come from the launcher (one process each) unless the backend runs them as threads
    // here: threads always, NCCL when no launcher started this process.
    const bool as_threads =
        backend == dist::Backend::Threads || (backend == dist::Backend::Nccl && !launched);
    if (as_threads && launched && env.world_size > 1) {
      usage_error("--backend " + cfg.backend_name +
                  " runs its ranks as threads of one process, but " + env.launcher + " started " +
                  std::to_string(env.world_size) + " processes");
    }
    if (!as_threads && !launched && world_size > 1) {
      usage_error("--backend " + cfg.backend_name + " runs one process per rank: start " +
                  std::to_string(world_size) + " of them with mpirun, srun or torchrun");
    }
    if (!as_threads && launched && world_size != 0 && world_size != env.world_size) {
      usage_error("--world-size " + std::to_string(world_size) + " disagrees with " + env.launcher +
                  ", which started " + std::to_string(env.world_size) + " ranks");
    }

    std::atomic<int64_t> wrong{0};
    auto rank_main = [&](dist::ProcessGroup& g) {
      const int64_t w = sweep(g, cfg);
      if (g.rank() == 0) wrong = w;
    };
    if (as_threads) {
      dist::SpawnOptions options;
      options.backend = backend;
      dist::spawn(world_size == 0 ? 1 : world_size, device, rank_main, options);
    } else {
      dist::GroupPtr group = dist::init_from_environment(device, {}, backend);
      // NCCL put this rank on cuda:local_rank; loom's work on this thread goes there too.
      if (group->device().is_cuda()) loom::cuda::set_device(group->device().index);
      rank_main(*group);
    }
    return wrong.load() == 0 ? 0 : 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collectives_bench: %s\n", e.what());
    return 2;
  }
}
