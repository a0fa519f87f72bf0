// The chart of a loom-scaling report: speedup against GPU count with the ideal line, the
// seed's published points (Krizhevsky 2014: 1.7x on 2 GPUs, 3.5x on 4, 6.2x on 8), loom's DDP
// points, its pipeline rows' (against their stage count) and, when given, PyTorch DDP's from
// bench/scaling_torch.py on the same machine. A CPU run or ranks sharing one GPU get a title
// saying "not a multi-GPU speedup" and neither the ideal line nor the seed's GPU points.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chart.h"
#include "scaling.h"

namespace loom::scaling {

// The precision the run computed in: fp32 on the CPU (TF32 and bf16 are CUDA modes), else
// --precision.
std::string computed_precision(const Config& c);

// compare_json: a report.json of bench/scaling_torch.py (the same schema); a malformed one is
// a loom::Error naming what is missing.
ChartSpec speedup_chart(const Report& report, const std::optional<std::string>& compare_json);
std::vector<uint8_t> speedup_chart_png(const Report& report,
                                       const std::optional<std::string>& compare_json);

}  // namespace loom::scaling
