// One rank's measurement (rank_run.h): a Trainee's timed steps (plain, DDP or pipeline), then
// across the group the isolated all-reduces, the parameter hash and every rank's median.
#include "rank_run.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "scaling.h"
#include "trainee.h"
#include "vision/data_split.h"

namespace loom::scaling {

namespace {

// The buckets' all-reduces of one step, alone and back to back (no backward to hide behind):
// the median over repetitions of the time from the first launch to the compute stream's wait
// for the last, on random data of the buckets' sizes and types.
double isolated_comm_ms(dist::ProcessGroup& group, const std::vector<dist::BucketInfo>& buckets) {
  constexpr int kWarmup = 5, kReps = 20;
  std::vector<Tensor> flats;
  for (const auto& b : buckets)
    flats.push_back(rand({b.numel}, TensorOptions(b.dtype).device(group.device())));
  const Device device = group.device();
  StepClock clock(device, kWarmup + kReps);
  for (int i = 0; i < kWarmup + kReps; ++i) {
    clock.mark(i);
    for (const Tensor& f : flats) group.all_reduce(f, dist::ReduceOp::Avg)->wait_stream();
  }
  clock.mark(kWarmup + kReps);
  std::vector<double> ms = clock.step_ms();
  return median(std::vector<double>(ms.begin() + kWarmup, ms.end()));
}

// FNV-1a over the bytes of every parameter, in registration order.
uint64_t parameter_hash(nn::Module& model) {
  uint64_t h = 1469598103934665603ull;
  for (const Tensor& p : model.parameters()) {
    const Tensor host = p.to(kCPU).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(host.raw_data());
    for (size_t i = 0; i < host.nbytes(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  }
  return h;
}

DType dtype_named(const std::string& name) {
  for (DType d : {kFloat32, kFloat64, kInt64, kInt32, kUInt8}) {
    if (name == dtype_name(d)) return d;
  }
  LOOM_FAIL("unknown dtype '", name.substr(0, 32), "'");
}

}  // namespace

std::shared_ptr<nn::Sequential> make_model(const std::string& name) {
  if (name == "seed_cnn") return nn::seed_cnn();
  if (name == "classic_cnn") return nn::classic_cnn();
  if (name == "resnet18") return nn::resnet18(1);
  LOOM_FAIL("--model: expected seed_cnn, classic_cnn or resnet18, got '", name.substr(0, 64), "'");
}

int count_differing_ranks(dist::ProcessGroup& group, nn::Module& model) {
  const int64_t mine = static_cast<int64_t>(parameter_hash(model));
  const Tensor in = from_vector(std::vector<int64_t>{mine}).to(group.device());
  const Tensor all = zeros({group.size()}, TensorOptions(kInt64).device(group.device()));
  group.all_gather(all, in)->wait();
  const std::vector<int64_t> hashes = all.to_vector<int64_t>();
  return static_cast<int>(
      std::count_if(hashes.begin(), hashes.end(), [&](int64_t h) { return h != hashes[0]; }));
}

ImageSource load_images(const std::string& data, int threads) {
  ImageSource source;
  if (data == "synthetic") return source;
  const std::optional<vision::DataSplit> split = vision::split_of(data);
  source.train_dir = split ? split->train_dir : data;  // a train/val root, or class folders
  io::Preprocessing p;
  p.height = p.width = 64;
  p.interpolation = *io::interpolation_from_name("bilinear");  // as loom-catdog and torchvision
  source.set = vision::load_image_set(source.train_dir, p, threads);
  return source;
}

double quantile(const std::vector<double>& sorted, double q) {
  return sorted[static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5)];
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}

namespace {

// Every rank's median step, by rank: one small all-gather, after the timed steps.
std::vector<double> rank_medians(dist::ProcessGroup& group, double mine) {
  const Tensor in = from_vector(std::vector<double>{mine}).to(group.device());
  const Tensor all = zeros({group.size()}, TensorOptions(kFloat64).device(group.device()));
  group.all_gather(all, in)->wait();
  return all.to_vector<double>();
}

// The trainee's own figures, then with a group the ones every rank takes part in.
RankResult finish(Trainee& t, const dist::GroupPtr& group) {
  RankResult r = t.finish();
  if (!group) return r;
  r.comm_ms = isolated_comm_ms(*group, r.buckets);
  r.differing_ranks = count_differing_ranks(*group, t.model());
  r.rank_median_ms = rank_medians(*group, median(r.step_ms));
  return r;
}

}  // namespace

RankResult run_rank(const Config& c, const ImageSource& source, int64_t batch, Device device,
                    const dist::GroupPtr& group) {
  Trainee t(c, source, batch, device, group);
  t.warm_up(c.warmup, group ? 0.0 : c.warmup_seconds, c.steps);
  t.timed_block(c.steps);
  return finish(t, group);
}

RankResult run_pipeline(const Config& c, const ImageSource& source, int64_t batch,
                        const PipelineSpec& spec) {
  LOOM_ASSERT(!spec.devices.empty());
  Trainee t(c, source, batch, spec.devices.front(), nullptr, &spec);
  t.warm_up(c.warmup, 0.0, c.steps);
  t.timed_block(c.steps);
  return finish(t, nullptr);
}

std::pair<RankResult, RankResult> run_rank_beside_plain(const Config& c, const ImageSource& source,
                                                        int64_t batch, Device device,
                                                        const dist::GroupPtr& group) {
  Trainee plain(c, source, batch, device, nullptr), ddp(c, source, batch, device, group);
  plain.warm_up(c.warmup, c.warmup_seconds, c.steps);
  ddp.warm_up(c.warmup, 0.0, c.steps);  // every rank the same count: its steps are collectives
  constexpr int kBlocks = 6;
  for (int b = 0; b < kBlocks; ++b) {
    const int steps = c.steps / kBlocks + (b < c.steps % kBlocks ? 1 : 0);
    if (steps == 0) continue;
    plain.timed_block(steps);
    ddp.timed_block(steps);
  }
  RankResult plain_result = finish(plain, nullptr);
  return {std::move(plain_result), finish(ddp, group)};
}

nlohmann::json ddp_step_json(const dist::DdpStepStats& s) {
  return {{"buckets", s.buckets},
          {"launched_during_backward", s.launched_during_backward},
          {"launched_at_end", s.launched_at_end},
          {"held_back", s.held_back}};
}

dist::DdpStepStats ddp_step_from_json(const nlohmann::json& j) {
  dist::DdpStepStats s;
  s.buckets = j.at("buckets").get<int>();
  s.launched_during_backward = j.at("launched_during_backward").get<int>();
  s.launched_at_end = j.at("launched_at_end").get<int>();
  s.held_back = j.at("held_back").get<int>();
  return s;
}

std::string rank_result_json(const RankResult& r) {
  nlohmann::json j;
  j["step_ms"] = r.step_ms;
  j["exposed_comm_ms"] = r.exposed_comm_ms;
  j["loader_wait_ms"] = r.loader_wait_ms;
  j["comm_ms"] = r.comm_ms ? nlohmann::json(*r.comm_ms) : nlohmann::json(nullptr);
  j["differing_ranks"] = r.differing_ranks;
  j["parameters"] = r.parameters;
  j["warmup_steps"] = r.warmup_steps;
  j["step_mode"] = r.step_mode;
  j["timed_eager_steps"] = r.timed_eager_steps;
  j["rank_median_ms"] = r.rank_median_ms;
  j["ddp_step"] = r.ddp_step ? ddp_step_json(*r.ddp_step) : nlohmann::json(nullptr);
  j["buckets"] = nlohmann::json::array();
  for (const auto& b : r.buckets) {
    j["buckets"].push_back({{"numel", b.numel},
                            {"dtype", dtype_name(b.dtype)},
                            {"offset", b.offset},
                            {"parameters", b.parameters}});
  }
  return j.dump() + "\n";
}

RankResult rank_result_from_json(const std::string& text, const std::string& source) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    RankResult r;
    r.step_ms = j.at("step_ms").get<std::vector<double>>();
    r.exposed_comm_ms = j.at("exposed_comm_ms").get<std::vector<double>>();
    r.loader_wait_ms = j.at("loader_wait_ms").get<std::vector<double>>();
    if (!j.at("comm_ms").is_null()) r.comm_ms = j.at("comm_ms").get<double>();
    r.differing_ranks = j.at("differing_ranks").get<int>();
    r.parameters = j.at("parameters").get<int64_t>();
    r.warmup_steps = j.at("warmup_steps").get<int>();
    r.step_mode = j.at("step_mode").get<std::string>();
    r.timed_eager_steps = j.at("timed_eager_steps").get<int>();
    r.rank_median_ms = j.at("rank_median_ms").get<std::vector<double>>();
    if (!j.at("ddp_step").is_null()) r.ddp_step = ddp_step_from_json(j.at("ddp_step"));
    for (const auto& b : j.at("buckets")) {
      dist::BucketInfo info;
      info.numel = b.at("numel").get<int64_t>();
      info.dtype = dtype_named(b.at("dtype").get<std::string>());
      info.offset = b.at("offset").get<int64_t>();
      info.parameters = b.at("parameters").get<std::vector<std::string>>();
      r.buckets.push_back(std::move(info));
    }
    LOOM_CHECK(!r.step_ms.empty(), "no step times");
    return r;
  } catch (const std::exception& e) {
    LOOM_FAIL("loom-scaling: the rank result ", source,
              " is not what a rank process writes: ", e.what());
  }
}

}  // namespace loom::scaling
