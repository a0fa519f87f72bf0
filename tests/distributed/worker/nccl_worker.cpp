// The program the NCCL process tests (nccl_process_multigpu_test.cpp) start once per GPU: it
// joins its job with dist::init_from_environment(kCUDA) (RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/
// MASTER_PORT; NCCL on cuda:LOCAL_RANK, the unique id and aborts through the TCP store), runs
// one scenario, writes what it saw to $LOOM_NCCL_JOB_DIR/rank<r>.txt (key=value lines; times
// are steady_clock nanoseconds, comparable across the machine's processes) and tells the
// outcome by its exit code.
//
//   nccl_worker ddp eager|captured [odd_step]
//       DDP training (nccl_cases.h) of the tests' model and data; parameters, first gradients and
//       losses to rank<r>.safetensors; an epoch of a DataLoader with pinned staging onto the
//       rank's GPU; then the CUDA driver's primary-context state of every GPU (F2: only this
//       rank's may be active). odd_step: rank 1 has one sample fewer there (F5).
//   nccl_worker throw-rank [die]
//       at step 3 rank 1's loss leaves out all but the first layer: DDP finds no gradient for
//       the others and aborts the group; every other rank must fail naming rank 1 (F4). die:
//       rank 1 then ends at once (std::_Exit: no goodbye to the store, as a crash).
//   nccl_worker abort-before-connect
//       rank 1 gives up (aborts) while rank 0 is in its first collective, whose connection
//       needs rank 1; every other rank must fail naming rank 1's reason (F3 across processes).
//   nccl_worker stall-replay
//       captured DDP steps on one batch (ranks_share_shapes: no per-step agreement) until
//       something fails; rank<r>.progress counts them (the test SIGSTOPs a rank once the graphs
//       replay); the others must fail through the replay's watch, naming it (F6).
//   nccl_worker die-mid-replay
//       captured steps of a model whose replay takes tens of ms; rank 1 SIGKILLs itself right
//       after launching its third replay; the others, waiting on their replay on the host,
//       must fail through the replay's watch, naming it (F6).
//   nccl_worker sticky-error
//       rank 1 queues a kernel that faults (a sticky illegal address) ahead of a collective:
//       its watchdog must abort its group (not std::terminate), and the others fail through
//       the store naming rank 1 (F9); rank 1 ends once they have (rank<r>.failed files).
//
// Exit codes: 0 all as expected; 1 a wrong result; 2 bad usage; 3 failed with the error the
// scenario expects; 4 failed otherwise; 5 succeeded where it should have failed; 6 could not
// join the job. LOOM_DIST_TIMEOUT (seconds) sets the group's timeout (default 60);
// LOOM_NCCL_FAULTY_RANK the rank that dies or faults in die-mid-replay and sticky-error (1).
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nccl_cases.h"
#include "worker_timeout.h"

int launch_spin_then_fault(CUstream_st* stream, double seconds);  // sticky_fault.cu

namespace {

namespace fs = std::filesystem;
using namespace loom;
namespace lt = loom::testing;
using Clock = std::chrono::steady_clock;

enum Exit {
  kOk = 0,
  kWrong = 1,
  kUsage = 2,
  kFailedAsExpected = 3,
  kFailedOtherwise = 4,
  kUnexpectedSuccess = 5,
  kJoinFailed = 6
};

std::string now_ns() {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

fs::path job_dir() {
  const char* dir = std::getenv("LOOM_NCCL_JOB_DIR");
  return dir != nullptr ? fs::path(dir) : fs::temp_directory_path();
}

// Key=value lines, written whole by rename so the test never reads half a file.
class Report {
 public:
  explicit Report(int rank) : rank_(rank) {}
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  void set(const std::string& key, int64_t value) { values_[key] = std::to_string(value); }
  void write() const { write_to("rank" + std::to_string(rank_) + ".txt", values_); }
  void progress(const std::map<std::string, std::string>& values) const {
    write_to("rank" + std::to_string(rank_) + ".progress", values);
  }

 private:
  static void write_to(const std::string& name, const std::map<std::string, std::string>& values) {
    const fs::path path = job_dir() / name, temporary = job_dir() / (name + ".tmp");
    {
      std::ofstream out(temporary, std::ios::trunc);
      for (const auto& [k, v] : values) {
        std::string flat = v;  // one line per key
        for (char& c : flat) c = c == '\n' ? ' ' : c;
        out << k << "=" << flat << "\n";
      }
    }
    fs::rename(temporary, path);
  }

  int rank_;
  std::map<std::string, std::string> values_;
};

// The GPUs other than `own` on which this process has an active primary context, as the CUDA
// driver says ("" when none), and whether `own` has one (it must: else the check sees nothing).
std::string foreign_contexts(int own, bool* own_active) {
  std::string foreign;
  *own_active = false;
  if (cuInit(0) != CUDA_SUCCESS) return "cuInit failed";
  int count = 0;
  if (cuDeviceGetCount(&count) != CUDA_SUCCESS) return "cuDeviceGetCount failed";
  for (int d = 0; d < count; ++d) {
    CUdevice device;
    unsigned int flags = 0;
    int active = 0;
    if (cuDeviceGet(&device, d) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS) {
      return "cuDevicePrimaryCtxGetState failed on device " + std::to_string(d);
    }
    if (d == own) {
      *own_active = active != 0;
    } else if (active != 0) {
      foreign += (foreign.empty() ? "" : ",") + std::to_string(d);
    }
  }
  return foreign;
}

// The rank that faults or dies: 1, or LOOM_NCCL_FAULTY_RANK (0 rehearses a scenario in a world
// of one, on one GPU).
int faulty_rank() {
  const char* v = std::getenv("LOOM_NCCL_FAULTY_RANK");
  return v != nullptr && *v != '\0' ? std::atoi(v) : 1;
}

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

fs::path failed_marker(int rank) { return job_dir() / ("rank" + std::to_string(rank) + ".failed"); }

// Waits (bounded) until every other rank has failed; false at the deadline.
bool others_failed(const dist::ProcessGroup& group, std::chrono::seconds within) {
  const Clock::time_point give_up = Clock::now() + within;
  for (int r = 0; r < group.size(); ++r) {
    // Polling for files the other processes write; the deadline bounds it.
    while (r != group.rank() && !fs::exists(failed_marker(r)) && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (r != group.rank() && !fs::exists(failed_marker(r))) return false;
  }
  return true;
}

// Records a failure (and marks it by a file others may wait for) and says whether it names
// what the scenario expects.
int failed(Report& report, const dist::ProcessGroup& group, const std::string& what,
           const std::string& expected) {
  report.set("failed_ns", now_ns());
  report.set("error", what);
  std::ofstream(failed_marker(group.rank())) << "failed\n";
  const bool named = contains(what, expected);
  std::fprintf(stderr, "nccl_worker %s: failed %s: %s\n", group.who().c_str(),
               named ? "as expected" : ("without naming \"" + expected + "\"").c_str(),
               what.c_str());
  return named ? kFailedAsExpected : kFailedOtherwise;
}

// 64 small images valued by index, for a loader whose workers stage batches in pinned memory.
class IndexImages : public data::Dataset {
 public:
  int64_t size() const override { return 64; }
  data::Example get(int64_t index) const override {
    return {full({8, 8, 3}, static_cast<double>(index), TensorOptions(kUInt8)), index % 2};
  }
};

// One epoch of a DataLoader onto this rank's GPU, two worker threads staging the batches in
// pinned buffers (the threads' CUDA calls must not make a context on cuda:0); the samples
// delivered, -1 when a batch came anywhere else or with other values.
int64_t load_an_epoch(Device device) {
  const IndexImages images;
  data::DataLoaderOptions options;
  options.batch_size = 16;
  options.shuffle = false;
  options.num_workers = 2;
  options.device = device;
  options.pin_memory = true;
  data::DataLoader loader(images, options);
  loader.start_epoch(0);
  int64_t samples = 0;
  while (std::optional<data::Batch> b = loader.next()) {
    if (b->images.device() != device) return -1;
    const std::vector<int64_t> labels = b->labels.cpu().to_vector<int64_t>();
    for (int64_t label : labels) samples += label == (samples % 2) ? 1 : -1000;
  }
  return samples;
}

int ddp(dist::ProcessGroup& g, Report& report, const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "eager" && args[0] != "captured")) return kUsage;
  lt::NcclTraining t;
  t.mode = args[0] == "captured" ? lt::StepMode::Captured : lt::StepMode::Eager;
  if (args.size() > 1) t.odd_step = std::stoi(args[1]);
  const lt::EquivalenceData data =
      lt::equivalence_data(t.per_rank * g.size() * t.steps, lt::kProcessDataSeed);
  const lt::NcclRun run = lt::train_nccl_rank(g, data, t);
  report.set("buckets", run.buckets);
  report.set("launched_during_backward", run.launched_during_backward);
  report.set("replays", run.replays);
  report.set("eager_steps", run.eager_steps);
  report.set("differing_steps", run.differing_steps);
  report.set("loader_samples", load_an_epoch(g.device()));
  bool own_active = false;
  report.set("foreign_contexts", foreign_contexts(g.device().index, &own_active));
  report.set("own_context", own_active ? 1 : 0);
  io::save_safetensors((job_dir() / ("rank" + std::to_string(g.rank()) + ".safetensors")).string(),
                       {{"losses", from_vector(run.losses)},
                        {"gradients", from_vector(run.gradients)},
                        {"parameters", from_vector(run.parameters)}});
  return run.differing_steps == 0 ? kOk : kWrong;
}

int throw_rank(dist::ProcessGroup& g, Report& report, const std::vector<std::string>& args) {
  // "die": rank 1 ends its process at once after its error, without the store's goodbye, as a
  // crash or a launcher's kill would: the others must still read why from the store.
  const bool die = !args.empty() && args[0] == "die";
  auto model = lt::ddp_model(42);
  model->to(g.device());
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g.shared_from_this(),
                                                             lt::several_buckets());
  optim::Adam adam(ddp->parameters(), optim::GroupOptions().with_lr(1e-3));
  const int64_t global = 4 * g.size();
  const lt::EquivalenceData data = lt::equivalence_data(global * 20, lt::kProcessDataSeed);
  for (int s = 0; s < 20; ++s) {
    try {
      const Tensor x = lt::rank_rows(data.images, s, global, g.rank(), g.size()).to(g.device());
      const Tensor y = lt::rank_rows(data.labels, s, global, g.rank(), g.size()).to(g.device());
      adam.zero_grad();
      Tensor loss;
      if (s == 3 && g.rank() == 1) {
        report.set("threw_ns", now_ns());
        loss = mean((*model)[0]->forward(x));  // no gradient for every layer but the first
      } else {
        loss = lt::bce_loss()(ddp->forward(x), y);
      }
      loss.backward();
      adam.step();
      Tensor m = loss.detach().reshape({1}).contiguous().clone();
      g.all_reduce(m, dist::ReduceOp::Avg)->wait();
    } catch (const Error& e) {
      const int code =
          failed(report, g, e.what(), "rank 1 of");  // rank 1's own error and the others'
      if (die && g.rank() == 1) {
        report.set("exit_code", code);
        report.write();
        std::fflush(nullptr);
        std::_Exit(code);
      }
      return code;
    }
  }
  return kUnexpectedSuccess;
}

int abort_before_connect(dist::ProcessGroup& g, Report& report) {
  const fs::path marker = job_dir() / "rank0_entering";
  const std::string reason =
      "rank 1 gave up before its first collective (abort-before-connect scenario)";
  if (g.rank() == 1) {
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(60);
    // Polling for a file rank 0 writes; the deadline bounds it.
    while (!fs::exists(marker) && Clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    try {
      report.set("threw_ns", now_ns());
      throw Error(reason);
    } catch (const Error& e) {
      // What a process's handler must do: an exception alone does not tell the other processes.
      g.abort(e.what());
      return failed(report, g, e.what(), reason);
    }
  }
  const Tensor in = full({1 << 20}, g.rank() + 1.0, g.device());
  const Tensor out =
      empty({g.size() * (int64_t(1) << 20)}, TensorOptions(kFloat32).device(g.device()));
  if (g.rank() == 0) std::ofstream(marker) << "entering\n";
  try {
    g.all_gather(out, in)->wait();  // the first collective: its connections need rank 1
  } catch (const Error& e) {
    return failed(report, g, e.what(), reason);
  }
  return kUnexpectedSuccess;
}

// Captured DDP steps on one fixed batch until a step fails or `limit` passes; after each, the
// progress file says how many ran and were replayed. `shapes_shared`: the steps skip the
// per-step shape agreement (CapturedStep::Options::ranks_share_shapes), so the replays' own
// collectives are the only ones. `after_run` may end the process.
int captured_until_failure(dist::ProcessGroup& g, Report& report, nn::ModulePtr model,
                           const Tensor& x, const Tensor& y, bool shapes_shared,
                           const std::string& expected, std::chrono::seconds limit,
                           const std::function<void(const train::CapturedStep&)>& after_run) {
  model->to(g.device());
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g.shared_from_this());
  optim::Adam adam(ddp->parameters(), optim::GroupOptions().with_lr(1e-4));
  train::CapturedStep::Options options;
  options.group = g.shared_from_this();
  options.ranks_share_shapes = shapes_shared;
  train::CapturedStep step(*ddp, lt::bce_loss(), adam, options);
  const Clock::time_point end = Clock::now() + limit;
  for (int64_t s = 0; Clock::now() < end; ++s) {
    try {
      const Clock::time_point begin = Clock::now();
      const train::CapturedStep::Result r = step.run(x, y);
      if (after_run) after_run(step);
      // The host waits for the replay, with no deadline of its own.
      const float loss = r.loss.item<float>();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
      report.progress({{"steps", std::to_string(s + 1)},
                       {"replays", std::to_string(step.replays())},
                       {"loss", std::to_string(loss)},
                       {"step_ms", std::to_string(ms)}});
    } catch (const Error& e) {
      report.set("replays", step.replays());
      return failed(report, g, e.what(), expected);
    }
  }
  return kUnexpectedSuccess;
}

int stall_replay(dist::ProcessGroup& g, Report& report) {
  const lt::EquivalenceData data = lt::equivalence_data(8, lt::kProcessDataSeed);
  // Every rank trains on that one batch, so the per-step agreement is left out: a stopped peer
  // then leaves the others waiting inside a replay, which only its watch can end.
  return captured_until_failure(g, report, lt::ddp_model(42), data.images.to(g.device()),
                                data.labels.to(g.device()), true, "a captured step's replay",
                                std::chrono::seconds(100), {});
}

int die_mid_replay(dist::ProcessGroup& g, Report& report) {
  // 4096-wide layers at batch 4096: some 1.2 TFLOP a step, tens of ms on an H200 in float32,
  // so a rank that dies just after launching its replay dies before its first all-reduce.
  constexpr int64_t kWidth = 4096;
  Generator gen(43);
  auto model = std::make_shared<nn::Sequential>();
  for (int layer = 0; layer < 3; ++layer) {
    model->add(std::make_shared<nn::Linear>(kWidth, kWidth, true, nn::Init::PyTorch, &gen));
    model->add(std::make_shared<nn::ReLU>());
  }
  model->add(std::make_shared<nn::Linear>(kWidth, 1, true, nn::Init::PyTorch, &gen));
  const Tensor x = randn({kWidth, kWidth}, kFloat32, &gen).to(g.device());
  const Tensor y = randint(0, 2, {kWidth, 1}, kFloat32, &gen).to(g.device());
  // With the per-step agreement: the dying rank has agreed before it launches its replay.
  return captured_until_failure(g, report, model, x, y, false, "a captured step's replay",
                                std::chrono::seconds(100), [&](const train::CapturedStep& step) {
                                  if (g.rank() != faulty_rank() || step.replays() < 3) return;
                                  report.set("killed_ns", now_ns());
                                  report.write();
                                  std::fflush(nullptr);
                                  std::raise(SIGKILL);
                                });
}

int sticky_error(dist::ProcessGroup& g, Report& report) {
  const int n = g.size();
  Tensor t = full({1024}, g.rank() + 1.0, g.device());
  for (int i = 0; i < 3; ++i) {
    t.fill_(g.rank() + 1.0);
    g.all_reduce(t)->wait();
  }
  if (max(t).item<float>() != n * (n + 1) / 2.0f) return kWrong;
  if (g.rank() != faulty_rank()) {
    try {
      g.all_reduce(t)->wait();  // rank 1's part never comes
    } catch (const Error& e) {
      return failed(report, g, e.what(), "rank 1 of");
    }
    return kUnexpectedSuccess;
  }
  report.set("fault_ns", now_ns());
  const int launch = launch_spin_then_fault(cuda::current_stream(g.device().index), 0.2);
  report.set("fault_launch", launch);
  std::string error = "the all_reduce after the fault succeeded";
  try {
    g.all_reduce(t)->wait();  // queued behind the faulting kernel
  } catch (const Error& e) {
    error = e.what();
  }
  report.set("error", error);
  // The watchdog, on its own thread, must have turned the sticky error into an abort. This
  // thread makes no CUDA call meanwhile (each would fail with the sticky error).
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(10);
  while (!g.is_aborted() && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  report.set("aborted", g.is_aborted() ? 1 : 0);
  report.set("aborted_ns", now_ns());
  report.set("abort_reason", g.is_aborted() ? g.abort_reason() : std::string());
  // This process's store connection stays until the others have read the abort (a process that
  // ends at once is the throw-rank die scenario's case, not this one's).
  report.set("others_failed", others_failed(g, std::chrono::seconds(20)) ? 1 : 0);
  report.write();
  std::fprintf(stderr, "nccl_worker %s: after the fault: %s; aborted %d: %s\n", g.who().c_str(),
               error.c_str(), g.is_aborted() ? 1 : 0,
               g.is_aborted() ? g.abort_reason().c_str() : "");
  std::fflush(nullptr);
  // The context is unusable: the destructors' CUDA calls would fail and some of them cannot throw.
  std::_Exit(g.is_aborted() ? kFailedAsExpected : kFailedOtherwise);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc >= 2 ? argv[1] : "";
  const std::vector<std::string> args(argv + std::min(argc, 2), argv + argc);
  const std::vector<std::string> known = {"ddp",          "throw-rank",     "abort-before-connect",
                                          "stall-replay", "die-mid-replay", "sticky-error"};
  if (std::find(known.begin(), known.end(), scenario) == known.end()) {
    std::fprintf(stderr,
                 "usage: nccl_worker ddp eager|captured [odd_step] | throw-rank [die] | "
                 "abort-before-connect | "
                 "stall-replay | die-mid-replay | sticky-error\n");
    return kUsage;
  }
  dist::GroupOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  if (!timeout_from_environment("nccl_worker", &options.timeout)) return kUsage;
  set_deterministic(true);
  set_conv_allow_tf32(false);

  dist::GroupPtr group;
  try {
    group = dist::init_from_environment(kCUDA, options);
  } catch (const Error& e) {
    std::fprintf(stderr, "nccl_worker: could not join the job: %s\n", e.what());
    return kJoinFailed;
  }
  Report report(group->rank());
  report.set("started_ns", now_ns());
  int code = kUsage;
  try {
    if (scenario == "ddp") code = ddp(*group, report, args);
    if (scenario == "throw-rank") code = throw_rank(*group, report, args);
    if (scenario == "abort-before-connect") code = abort_before_connect(*group, report);
    if (scenario == "stall-replay") code = stall_replay(*group, report);
    if (scenario == "die-mid-replay") code = die_mid_replay(*group, report);
    if (scenario == "sticky-error") code = sticky_error(*group, report);
  } catch (const std::exception& e) {
    report.set("error", e.what());
    std::fprintf(stderr, "nccl_worker %s: %s failed: %s\n", group->who().c_str(), scenario.c_str(),
                 e.what());
    code = kFailedOtherwise;
  }
  report.set("exit_code", code);
  report.write();
  std::fprintf(stderr, "nccl_worker %s: %s: exit %d\n", group->who().c_str(), scenario.c_str(),
               code);
  return code;
}
