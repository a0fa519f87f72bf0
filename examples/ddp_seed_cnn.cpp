// The seed's CNN trained with DistributedDataParallel on every GPU of the machine, one thread
// per GPU (docs/distributed.md shows this program); without a GPU, on 2 CPU ranks. Each rank
// draws its own random batches here: a real program gives each rank its shard of a dataset
// (data::DistributedSampler).
//   ddp_seed_cnn [steps]
#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>

using namespace loom;

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 100;
  const bool gpu = cuda_is_available();
  const int world = gpu ? cuda_device_count() : 2;
  try {
    dist::spawn(world, gpu ? kCUDA : kCPU, [&](dist::ProcessGroup& group) {
      auto model = nn::seed_cnn();
      model->to(group.device());
      auto ddp = std::make_shared<dist::DistributedDataParallel>(model, group.shared_from_this());
      optim::Adam adam(ddp->parameters(), optim::GroupOptions().with_lr(1e-3));
      for (int step = 0; step < steps; ++step) {
        Tensor images = rand({32, 3, 64, 64}, group.device());
        Tensor labels = randint(0, 2, {32, 1}, TensorOptions(kFloat32).device(group.device()));
        adam.zero_grad();
        Tensor loss = nn::binary_cross_entropy_with_logits(ddp->forward(images), labels);
        loss.backward();  // averaged over the ranks before backward returns
        adam.step();
        if (group.rank() == 0 && (step + 1) % 20 == 0) {
          std::printf("step %d: rank 0's loss %.4f\n", step + 1, loss.item<float>());
        }
      }
      if (group.rank() == 0)
        std::printf("%d ranks (%s) trained in step\n", group.size(), group.backend());
    });
  } catch (const Error& e) {
    std::fprintf(stderr, "ddp_seed_cnn: %s\n", e.what());
    return 1;
  }
  return 0;
}
