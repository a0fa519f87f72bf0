// PipelineParallel with the caller on a stream of its own (a StreamGuard, as a spawn rank or a
// user's stream has): the stages are ordered after the caller's current stream, not the
// device's compute stream (review F16), so the batch written on that stream behind a busy
// queue is read after it is written and the optimizer step waits for backward. Every stage on
// the one GPU: this runs without a second device.
#include <gtest/gtest.h>

#include "pipeline_stream_cases.h"

namespace loom::testing {
namespace {

TEST(PipelineStreams, UnderAStreamGuardItTrainsAsOnTheComputeStream) {
  LOOM_REQUIRE_CUDA();
  DeterministicAlgorithmsGuard deterministic_guard;
  ConvTf32Scope full_float32(false);
  const int64_t batch = 18;  // 4 micro-batches: 5 + 5 + 4 + 4
  const int steps = 6;
  const EquivalenceData data = equivalence_data(batch * steps, 35);
  const TrainedRun whole = train_single(data, batch, steps, kCUDA);
  for (dist::PipelineSchedule schedule :
       {dist::PipelineSchedule::GPipe, dist::PipelineSchedule::OneFOneB}) {
    dist::PipelineOptions options;
    options.micro_batches = 4;
    options.schedule = schedule;
    const std::string what = dist::schedule_name(schedule);
    const TrainedRun on_compute =
        train_pipeline_over(data, batch, steps, {kCUDA, kCUDA}, options, false);
    const TrainedRun on_user =
        train_pipeline_over(data, batch, steps, {kCUDA, kCUDA}, options, true);
    expect_same_training(on_compute, whole, 1e-5, what + ", the compute stream");
    expect_same_training(on_user, whole, 1e-5, what + ", a stream of the caller's");
    expect_same_training(on_user, on_compute, 1e-5,
                         what + ", the caller's stream against the compute stream");
  }
}

}  // namespace
}  // namespace loom::testing
