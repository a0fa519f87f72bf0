// Collective bandwidth of loom's process groups, measured and reported as nccl-tests does: per
// size, the time of one collective, its algorithm and bus bandwidth, and a #wrong count.
//   collectives_bench --op all_reduce|broadcast|all_gather|reduce_scatter|all|OP,OP,...
//                     --sizes 8B:256MB --backend nccl|threads|mpi|tcp [--world-size N]
//                     [--device cpu|cuda[:k]] [--dtype float32|float64|int64|int32|uint8]
//                     [--iters 20] [--warmup 5] [--timeout 300] [--json] [--json-out FILE]
// One process runs every --op in turn over the same group (one NCCL communicator, one table per
// collective). NCCL ranks are threads of this process (dist::spawn) unless a launcher started
// one process per rank (mpirun, srun, or RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT).
//
// Definitions (nccl-tests doc/PERFORMANCE.md), with n ranks:
//   size  = the larger buffer of one rank in bytes (all_gather: its output, reduce_scatter: its
//           input); count = the collective's per-rank element count (all_gather: the input,
//           reduce_scatter: the output), so all_gather/reduce_scatter sizes round down to n |
//           count.
//   time  = on each rank, (stop - start) / iters, CUDA events on the rank's current stream (the
//           CPU: steady_clock, each collective waited); time(avg) is the average over ranks, as
//           nccl-tests reports by default (its -a 1), time(max) the slowest rank's.
//   algbw = size / time(avg);  busbw = algbw * factor, factor = 2(n-1)/n (all_reduce),
//           (n-1)/n (all_gather, reduce_scatter), 1 (broadcast): the bytes each rank's link
//           carries, comparable with the hardware's bandwidth whatever n is.
//   issue = the host's time per collective call during the timed loop (average over ranks):
//           what a rank's thread pays to hand one collective to the backend.
//   #wrong = elements, summed over ranks, that differ from the closed-form answer after one more
//           collective on inputs valued by rank: rank r's element i is (r + 1) * (i % 7 + 1).
//   place = in (all_reduce and broadcast work in place in loom's API) or out (all_gather and
//           reduce_scatter write another tensor; loom refuses overlapping buffers).
//
// Timing on a GPU, per size: --warmup collectives issued back to back; then every rank's
// current stream waits for a barrier (a one-element all-reduce) and records its start event, so
// the ranks start together on the device rather than after a host wait; then --iters
// collectives issued back to back with no wait between them (the communication stream orders
// them), the current stream waits once for the last, and records the stop event. nccl-tests
// times the same back-to-back launches with a host clock from a host barrier to the stream's
// end; the device-side start here leaves out the host barrier's wake-up skew between ranks.
#include <loom/loom.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace dist = loom::dist;
using loom::DType;
using loom::Tensor;
using loom::TensorOptions;

namespace {

enum class Op { AllReduce, Broadcast, AllGather, ReduceScatter };
constexpr Op kOps[] = {Op::AllReduce, Op::Broadcast, Op::AllGather, Op::ReduceScatter};
constexpr const char* kOpNames[] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter"};

const char* op_name(Op op) { return kOpNames[static_cast<int>(op)]; }
bool reduces(Op op) { return op == Op::AllReduce || op == Op::ReduceScatter; }
bool in_place(Op op) { return op == Op::AllReduce || op == Op::Broadcast; }

struct Config {
  std::vector<Op> ops;
  std::string backend_name, device_spec, dtype_name, json_path;
  DType dtype = loom::kFloat32;
  std::vector<int64_t> sizes;
  int iters = 20, warmup = 5;
  double timeout_s = 300;
  bool json = false;
  std::string launch, launcher;    // "threads"/"processes"; "spawn", "env", "mpirun", "srun"
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

// "all", one collective, or several separated by commas (each once, in the order given).
std::vector<Op> parse_ops(const std::string& spec) {
  std::vector<Op> ops;
  size_t begin = 0;
  for (;;) {
    const size_t comma = spec.find(',', begin);
    const std::string name =
        spec.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    std::vector<Op> named;
    if (name == "all") named.assign(std::begin(kOps), std::end(kOps));
    for (int i = 0; i < 4; ++i) {
      if (name == kOpNames[i]) named.push_back(kOps[i]);
    }
    if (named.empty()) {
      throw CLI::ValidationError("--op", "'" + name +
                                             "' is not all_reduce, broadcast, all_gather, "
                                             "reduce_scatter or all");
    }
    for (Op op : named) {
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    }
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return ops;
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
  double avg_us = 0, max_us = 0, issue_us = 0, algbw = 0, busbw = 0;
};

// busbw means the bytes each rank's link carries; one rank has no link, and NCCL's one-rank
// path is a local copy or nothing, so at world size 1 busbw is n/a (text) and null (JSON).
bool has_busbw(int n) { return n > 1; }

// The busbw column: "%7.2f" or n/a; its JSON value: "%.4f" or null.
std::string busbw_text(const Row& r, int n, bool json) {
  char text[32];
  std::snprintf(text, sizeof(text), json ? "%.4f" : "%7.2f", r.busbw);
  return has_busbw(n) ? text : json ? "null" : "    n/a";
}

// The reduction timed: sum, or max for integers, whose repeated in-place sums would overflow.
dist::ReduceOp timed_op(DType dtype) {
  return loom::is_floating(dtype) ? dist::ReduceOp::Sum : dist::ReduceOp::Max;
}

// Times `size` bytes of `op` on this rank, then checks one run on rank values. Every rank calls
// it with the same arguments; rows are the same on every rank.
Row measure(dist::ProcessGroup& g, const Config& cfg, Op op, int64_t size) {
  const int n = g.size();
  const int64_t elt = static_cast<int64_t>(loom::element_size(cfg.dtype));
  const bool split = op == Op::AllGather || op == Op::ReduceScatter;
  const int64_t total = split ? size / elt / n * n : size / elt;  // elements of the larger buffer
  Row row;
  row.count = split ? total / n : total;
  row.bytes = total * elt;
  if (total == 0) return row;

  const TensorOptions on_device = TensorOptions(cfg.dtype).device(g.device());
  // all_reduce and broadcast work in place on `in`; the others write `out`.
  const int64_t in_numel = op == Op::AllGather ? row.count : total;
  // Timed on rank values, never zeros. Repeated in-place sums multiply them by the world size
  // each time: floats may reach inf (which costs what any value costs), but integers would
  // overflow (undefined in the CPU loops), so integer dtypes are timed with max, which moves
  // and combines the same bytes (see timed_op).
  Tensor in = rank_values(in_numel, cfg.dtype, g.rank(), 0).to(g.device());
  Tensor out;
  if (op == Op::AllGather) out = loom::empty({total}, on_device);
  if (op == Op::ReduceScatter) out = loom::empty({row.count}, on_device);
  auto issue = [&](dist::ReduceOp reduce) -> dist::WorkPtr {
    switch (op) {
      case Op::AllReduce:
        return g.all_reduce(in, reduce);
      case Op::Broadcast:
        return g.broadcast(in, 0);
      case Op::AllGather:
        return g.all_gather(out, in);
      case Op::ReduceScatter:
        return g.reduce_scatter(out, in, reduce);
    }
    return nullptr;
  };
  using Clock = std::chrono::steady_clock;
  const auto micros = [](Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
  };

  double us = 0, issue_us = 0;
  if (g.device().is_cuda()) {
    const int d = g.device().index;
    const loom::cuda::StreamHandle stream = loom::cuda::current_stream(d);
    // Back to back, no wait between them: each collective's communication stream first waits
    // for this stream (an event), and the collectives follow one another on it.
    dist::WorkPtr last;
    for (int i = 0; i < cfg.warmup; ++i) last = issue(timed_op(cfg.dtype));
    if (last) last->wait_stream();
    loom::cuda::Event start(d), stop(d);
    // Aligned on the device: the start event follows the barrier's completion on every rank.
    g.barrier()->wait_stream();
    start.record(stream);
    const Clock::time_point host_start = Clock::now();
    for (int i = 0; i < cfg.iters; ++i) last = issue(timed_op(cfg.dtype));
    issue_us = micros(Clock::now() - host_start) / cfg.iters;
    last->wait_stream();  // the stream waits once, for the last (the stream orders the rest)
    stop.record(stream);
    stop.synchronize();
    us = 1e3 * loom::cuda::Event::elapsed_ms(start, stop) / cfg.iters;
  } else {
    for (int i = 0; i < cfg.warmup; ++i) issue(timed_op(cfg.dtype))->wait();
    g.barrier()->wait();
    const Clock::time_point t0 = Clock::now();
    Clock::duration issuing{};
    for (int i = 0; i < cfg.iters; ++i) {
      const Clock::time_point before = Clock::now();
      dist::WorkPtr w = issue(timed_op(cfg.dtype));
      issuing += Clock::now() - before;
      w->wait();
    }
    us = micros(Clock::now() - t0) / cfg.iters;
    issue_us = micros(issuing) / cfg.iters;
  }
  const dist::ReduceOp sum = dist::ReduceOp::Sum, max = dist::ReduceOp::Max;
  row.avg_us = reduce_scalar(g, us, loom::kFloat64, sum) / n;
  row.max_us = reduce_scalar(g, us, loom::kFloat64, max);
  row.issue_us = reduce_scalar(g, issue_us, loom::kFloat64, sum) / n;
  row.algbw = static_cast<double>(row.bytes) / (row.avg_us * 1e-6) / 1e9;
  row.busbw = row.algbw * bus_factor(op, n);

  // The check: rank values in, outputs poisoned with 0, which no answer equals below 64 ranks
  // (uint8's wrapped answers reach 0 from there).
  in.copy_(rank_values(in_numel, cfg.dtype, g.rank(), 0));
  if (out.defined()) out.fill_(0.0);
  issue(dist::ReduceOp::Sum)->wait();  // the closed form is the sum's
  const int64_t mine = count_wrong(out.defined() ? out : in, op, n, g.rank(), row.count);
  row.wrong = static_cast<int64_t>(reduce_scalar(g, static_cast<double>(mine), loom::kInt64, sum));
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

std::string launch_words(const Config& cfg) {
  if (cfg.launch == "threads") return "threads of one process (dist::spawn)";
  if (cfg.launcher == "env")
    return "a process per rank (RANK/WORLD_SIZE/LOCAL_RANK, TCP rendezvous)";
  return "a process per rank (" + cfg.launcher + ")";
}

// The variables that change what NCCL does, as this process sees them ("-": unset).
std::string nccl_environment() {
  std::string text;
  for (const char* name :
       {"NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_LEVEL", "NCCL_MIN_NCHANNELS",
        "NCCL_MAX_NCHANNELS", "NCCL_COMM_BLOCKING", "CUDA_VISIBLE_DEVICES"}) {
    const char* value = std::getenv(name);
    text += std::string(text.empty() ? "" : " ") + name + "=" + (value ? value : "-");
  }
  return text;
}

void print_block(const std::string& block) {
  std::string line;
  for (char c : block) {
    if (c != '\n') {
      line += c;
      continue;
    }
    std::printf("#   %s\n", line.c_str());
    line.clear();
  }
  if (!line.empty()) std::printf("#   %s\n", line.c_str());
}

void print_setup(const dist::ProcessGroup& g, const Config& cfg) {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  std::string ops;
  for (Op op : cfg.ops) ops += std::string(ops.empty() ? "" : ", ") + op_name(op);
  std::printf("# loom collectives_bench: %s; %s; %zu sizes from %lld to %lld B (factor 2)\n",
              ops.c_str(), cfg.dtype_name.c_str(), cfg.sizes.size(),
              static_cast<long long>(cfg.sizes.front()), static_cast<long long>(cfg.sizes.back()));
  std::printf("# backend %s, world size %d, ranks are %s, device %s, host %s\n", g.backend(),
              g.size(), launch_words(cfg).c_str(), device_words(g).c_str(), host);
  std::printf("# NCCL %s (loom's), CUDA devices visible %d; %s\n", dist::nccl_version().c_str(),
              loom::cuda_device_count(), nccl_environment().c_str());
  if (g.device().is_cuda()) {
    print_block(cfg.gpu_list);
    print_block(cfg.topology);
  }
  std::printf("# iters %d timed, warmup %d untimed, per size; group timeout %.0f s; %s\n",
              cfg.iters, cfg.warmup, cfg.timeout_s, now_string().c_str());
  if (g.device().is_cuda()) {
    std::printf(
        "# time: CUDA events on each rank's current stream: the stream waits for a barrier (a "
        "one-element all_reduce), records start; iters collectives issued back to back, no wait "
        "between them; the stream waits once for the last, records stop; (stop - start) / iters\n");
  } else {
    std::printf(
        "# time: steady_clock on each rank after a barrier, each collective waited; / iters\n");
  }
  std::printf(
      "# time(avg): the average over ranks (nccl-tests' default); time(max): the slowest rank; "
      "issue: host us per collective call (average over ranks)\n");
  std::printf(
      "# algbw = size / time(avg); busbw = algbw * factor (all_reduce 2(n-1)/n, all_gather and "
      "reduce_scatter (n-1)/n, broadcast 1)\n");
  std::printf(
      "# #wrong: elements (summed over ranks) differing from the closed form after one more "
      "collective on inputs (r+1)*(i%%7+1); place: in (in place) or out (another tensor)\n");
  std::printf(
      "# timed reduction: %s (integer dtypes are timed with max: repeated in-place sums "
      "would overflow); the check's: sum\n#\n",
      dist::reduce_op_name(timed_op(cfg.dtype)));
}

void print_op_header(const Config& cfg, Op op, int n) {
  std::string what = op == Op::Broadcast ? "root 0, " : "";
  if (reduces(op))
    what = std::string("reduction ") + dist::reduce_op_name(timed_op(cfg.dtype)) + ", ";
  std::printf("# %s: %s%s; busbw factor %.4f%s\n", op_name(op), what.c_str(),
              in_place(op) ? "in place" : "out of place", bus_factor(op, n),
              has_busbw(n) ? "" : " (busbw n/a at world size 1: no link, NCCL's one-rank path)");
  std::printf("# %10s  %12s  %8s  %6s  %5s  %5s  %10s  %10s  %8s  %7s  %7s  %6s\n", "size", "count",
              "type", "redop", "root", "place", "time(avg)", "time(max)", "issue", "algbw", "busbw",
              "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %5s  %5s  %10s  %10s  %8s  %7s  %7s  %6s\n", "(B)",
              "(elements)", "", "", "", "", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "");
}

std::string json_row(const dist::ProcessGroup& g, const Config& cfg, Op op, const Row& r) {
  char text[1024];
  std::snprintf(
      text, sizeof(text),
      "{\"framework\": \"loom\", \"backend\": \"%s\", \"launch\": \"%s\", \"launcher\": \"%s\", "
      "\"world_size\": %d, \"device\": \"%s\", \"nccl\": \"%s\", \"op\": \"%s\", \"dtype\": "
      "\"%s\", "
      "\"redop\": \"%s\", \"root\": %d, \"place\": \"%s\", \"size_bytes\": %lld, \"count\": %lld, "
      "\"time_us\": %.3f, \"time_max_us\": %.3f, \"issue_us\": %.3f, \"algbw_gbps\": %.4f, "
      "\"busbw_gbps\": %s, \"wrong\": %lld, \"iters\": %d, \"warmup\": %d, "
      "\"time_over_ranks\": \"avg\"}",
      g.backend(), cfg.launch.c_str(), cfg.launcher.c_str(), g.size(), g.device().str().c_str(),
      dist::nccl_version().c_str(), op_name(op), cfg.dtype_name.c_str(),
      reduces(op) ? dist::reduce_op_name(timed_op(cfg.dtype)) : "none",
      op == Op::Broadcast ? 0 : -1, in_place(op) ? "in" : "out", static_cast<long long>(r.bytes),
      static_cast<long long>(r.count), r.avg_us, r.max_us, r.issue_us, r.algbw,
      busbw_text(r, g.size(), true).c_str(), static_cast<long long>(r.wrong), cfg.iters,
      cfg.warmup);
  return text;
}

void print_row(const dist::ProcessGroup& g, const Config& cfg, Op op, const Row& r,
               FILE* json_file) {
  const std::string json = json_row(g, cfg, op, r);
  if (json_file) {
    std::fprintf(json_file, "%s\n", json.c_str());
    std::fflush(json_file);
  }
  if (cfg.json) {
    std::printf("%s\n", json.c_str());
  } else {
    std::printf(
        "%12lld  %12lld  %8s  %6s  %5d  %5s  %10.2f  %10.2f  %8.2f  %7.2f  %7s  %6lld\n",
        static_cast<long long>(r.bytes), static_cast<long long>(r.count), cfg.dtype_name.c_str(),
        reduces(op) ? dist::reduce_op_name(timed_op(cfg.dtype)) : "none",
        op == Op::Broadcast ? 0 : -1, in_place(op) ? "in" : "out", r.avg_us, r.max_us, r.issue_us,
        r.algbw, busbw_text(r, g.size(), false).c_str(), static_cast<long long>(r.wrong));
  }
  std::fflush(stdout);
}

// The sweep of one collective on one rank; rank 0 prints. Returns the total #wrong.
int64_t sweep(dist::ProcessGroup& g, const Config& cfg, Op op, FILE* json_file) {
  const bool printer = g.rank() == 0;
  if (printer && !cfg.json) print_op_header(cfg, op, g.size());
  int64_t wrong = 0, rows = 0;
  double busbw_sum = 0;
  for (int64_t size : cfg.sizes) {
    const Row r = measure(g, cfg, op, size);
    if (r.count == 0) continue;  // below one element per rank: nothing to move
    wrong += r.wrong;
    busbw_sum += r.busbw;
    ++rows;
    if (printer) print_row(g, cfg, op, r, json_file);
  }
  if (printer && !cfg.json) {
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
                wrong ? "FAILED" : "OK");
    if (has_busbw(g.size())) {
      std::printf("# Avg bus bandwidth    : %.4f GB/s over %lld sizes\n#\n",
                  rows ? busbw_sum / static_cast<double>(rows) : 0.0, static_cast<long long>(rows));
    } else {
      std::printf("# Avg bus bandwidth    : n/a (world size 1) over %lld sizes\n#\n",
                  static_cast<long long>(rows));
    }
  }
  return wrong;
}

// Every collective of the configuration on one rank. Returns the total #wrong.
int64_t run_rank(dist::ProcessGroup& g, const Config& cfg) {
  std::unique_ptr<FILE, int (*)(FILE*)> json_file(nullptr, &std::fclose);
  if (g.rank() == 0) {
    if (!cfg.json) print_setup(g, cfg);
    if (!cfg.json_path.empty()) {
      json_file.reset(std::fopen(cfg.json_path.c_str(), "w"));
      if (!json_file)
        std::fprintf(stderr, "collectives_bench: cannot write %s\n", cfg.json_path.c_str());
    }
  }
  int64_t wrong = 0;
  for (Op op : cfg.ops) wrong += sweep(g, cfg, op, json_file.get());
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
  cfg.backend_name = "threads";
  cfg.dtype_name = "float32";
  std::string ops_spec = "all_reduce";
  std::string sizes_spec = "8B:256MB";
  int world_size = 0;
  app.add_option("--op", ops_spec,
                 "all_reduce, broadcast, all_gather, reduce_scatter, several separated by commas, "
                 "or all (one table each, in one process)");
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
  app.add_option("--timeout", cfg.timeout_s,
                 "seconds a collective may wait for the other ranks before the group aborts")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_flag("--json", cfg.json, "one JSON object per row instead of the table");
  app.add_option("--json-out", cfg.json_path,
                 "also write the rows as JSON lines to this file (rank 0)");
  CLI11_PARSE(app, argc, argv);

  const DType dtypes[] = {loom::kFloat32, loom::kFloat64, loom::kInt64, loom::kInt32, loom::kUInt8};
  for (DType d : dtypes) {
    if (cfg.dtype_name == loom::dtype_name(d)) cfg.dtype = d;
  }
  try {
    cfg.ops = parse_ops(ops_spec);
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
    cfg.launch = as_threads ? "threads" : "processes";
    cfg.launcher = as_threads ? "spawn" : env.launcher;
    dist::GroupOptions group_options;
    group_options.timeout = std::chrono::milliseconds(static_cast<int64_t>(cfg.timeout_s * 1000));

    std::atomic<int64_t> wrong{0};
    auto rank_main = [&](dist::ProcessGroup& g) {
      const int64_t w = run_rank(g, cfg);
      if (g.rank() == 0) wrong = w;
    };
    if (as_threads) {
      dist::SpawnOptions options;
      options.backend = backend;
      options.group = group_options;
      dist::spawn(world_size == 0 ? 1 : world_size, device, rank_main, options);
    } else {
      dist::GroupPtr group = dist::init_from_environment(device, group_options, backend);
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
