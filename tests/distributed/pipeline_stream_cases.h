// PipelineParallel over a list of devices (stage s on devices[s]; several stages may share a
// GPU), trained as pipeline_cases.h trains it, optionally with the caller on streams of its
// own: a StreamGuard on every device, and each step's batch produced on the guarded stream
// behind some 20 ms of matrix products. A pipeline that ordered its stages after the device's
// compute stream instead of the caller's current one (review F16) would then read the batch
// before it is written and let the optimizer step run before backward has finished.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pipeline_cases.h"

namespace loom::testing {

inline TrainedRun train_pipeline_over(const EquivalenceData& data, int64_t batch, int steps,
                                      const std::vector<Device>& devices,
                                      const dist::PipelineOptions& options, bool on_user_streams) {
  std::vector<std::pair<int, cuda::StreamHandle>> streams;
  if (on_user_streams) {
    std::set<int> gpus;
    for (const Device& d : devices) {
      if (d.is_cuda()) gpus.insert(d.index);
    }
    for (int gpu : gpus) streams.emplace_back(gpu, cuda::create_stream(gpu));
  }
  TrainedRun run;
  {  // everything made on the streams is freed before they are destroyed
    std::vector<std::unique_ptr<cuda::StreamGuard>> guards;
    for (const auto& [gpu, stream] : streams)
      guards.push_back(std::make_unique<cuda::StreamGuard>(gpu, stream));
    auto model = ddp_model(42);
    auto pipe = std::make_shared<dist::PipelineParallel>(model, devices, options);
    optim::Adam adam(pipe->parameters(), optim::GroupOptions().with_lr(1e-3));
    const Device first = devices.front();
    Tensor a, b;
    if (on_user_streams) {
      Generator gen(5);
      a = randn({4096, 4096}, kFloat32, &gen).to(first);
      b = mul(randn({4096, 4096}, kFloat32, &gen), 1.0 / 64).to(first);
    }
    for (int s = 0; s < steps; ++s) {
      adam.zero_grad();
      Tensor x = data.images.narrow(0, s * batch, batch).to(first);
      Tensor y = data.labels.narrow(0, s * batch, batch).to(first);
      if (on_user_streams) {
        for (int k = 0; k < 8; ++k) a = matmul(a, b);  // the caller's stream is busy for a while
        x = mul(x, 1.0);  // then writes this step's batch (new blocks, other contents before)
        y = mul(y, 1.0);
      }
      const dist::PipelineStepResult r =
          pipe->train_step(x, y, [](const Tensor& out, const Tensor& target) {
            return nn::binary_cross_entropy_with_logits(out, target);
          });
      if (s == 0) run.gradients = flat_gradients(*model);
      adam.step();
      run.losses.push_back(r.loss.item<float>());
    }
    run.parameters = flat_parameters(*model);
  }
  for (const auto& [gpu, stream] : streams) {
    cuda::synchronize_stream(stream);
    cuda::destroy_stream(gpu, stream);
  }
  return run;
}

}  // namespace loom::testing
