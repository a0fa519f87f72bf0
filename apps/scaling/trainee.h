// One model in training on one rank for loom-scaling: the plain model, the same inside
// DistributedDataParallel over the rank's group, or cut into pipeline stages; its batches, its
// steps (eager, or each one CUDA graph replay through train::CapturedStep), the warm-up and the
// timed blocks. The figures that need the whole group (isolated all-reduces, parameter hashes,
// every rank's median) are rank_run's.
#pragma once

#include <loom/loom.h>

#include <memory>
#include <vector>

#include "rank_run.h"
#include "step_clock.h"

namespace loom::scaling {

struct Config;
class Batches;

// Whether a rank's steps are captured (Config::graph): off; on, or auto where possible, which is
// on CUDA with no group or a group whose collectives a graph can hold (NCCL). --graph on where
// it is not possible is a loom::Error naming the device and the backend.
bool captures_steps(const Config& config, Device device, const dist::GroupPtr& group);

class Trainee {
 public:
  // group: DDP over it (null: the plain model); pipeline: the model cut into its stages instead
  // (never captured: a pipeline's stages run op by op on their own streams).
  Trainee(const Config& config, const ImageSource& source, int64_t batch, Device device,
          const dist::GroupPtr& group, const PipelineSpec* pipeline = nullptr);
  ~Trainee();

  // One training step; returns the host's wait for its batch.
  double step();
  // At least `steps` steps (2 when captured: the eager one and the capture, so that every
  // timed step is a replay), and while `seconds` have not passed; then an eager DDP's stall
  // timer is readied for `timed` steps.
  void warm_up(int steps, double seconds, int timed);
  // `steps` timed steps; their times are read by finish().
  void timed_block(int steps);
  // This rank's own figures: every block's step times, an eager DDP's stalls and bucket
  // launches, a pipeline's stage timing (one more step with its stage ops timed).
  RankResult finish();
  // The model as built (inside DDP or the pipeline): its parameters are the trained ones.
  nn::Module& model() { return *model_; }

 private:
  nn::Module& trained();
  void synchronize();

  RankResult result_;
  Device device_;
  std::vector<Device> devices_;  // every device the model is on
  bool autocast_;                // bf16 mixed precision (--precision bf16 on CUDA)
  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<dist::DistributedDataParallel> ddp_;
  std::shared_ptr<dist::PipelineParallel> pipe_;
  std::unique_ptr<optim::Adam> adam_;
  std::unique_ptr<train::CapturedStep>
      captured_;  // after adam_: destroyed before the model it steps
  std::unique_ptr<Batches> batches_;
  Tensor images_, labels_;
  std::vector<std::unique_ptr<StepClock>> clocks_;
};

}  // namespace loom::scaling
