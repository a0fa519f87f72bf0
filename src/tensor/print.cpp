// Printing a tensor the way PyTorch's repr does: nested brackets, a shared number format, and
// the device, dtype and requires_grad when they differ from the defaults.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "loom/tensor/autograd.h"
#include "loom/tensor/tensor.h"

namespace loom {

namespace {

constexpr int64_t kSummariseAbove = 1000;  // PyTorch's threshold
constexpr int64_t kEdgeItems = 3;

struct Format {
  bool floating = false;
  bool scientific = false;
  bool all_integral = false;
  int width = 1;
};

std::string format_value(double v, const Format& f) {
  std::ostringstream out;
  if (!f.floating) {
    out << static_cast<int64_t>(v);
  } else if (std::isnan(v)) {
    out << "nan";
  } else if (std::isinf(v)) {
    out << (v > 0 ? "inf" : "-inf");
  } else if (f.scientific) {
    out << std::scientific << std::setprecision(4) << v;
  } else if (f.all_integral) {
    out << std::fixed << std::setprecision(0) << v << ".";
  } else {
    out << std::fixed << std::setprecision(4) << v;
  }
  return out.str();
}

Format choose_format(const std::vector<double>& values, bool floating) {
  Format f;
  f.floating = floating;
  double max_abs = 0.0, min_abs = INFINITY;
  f.all_integral = true;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    max_abs = std::max(max_abs, std::abs(v));
    if (v != 0.0) min_abs = std::min(min_abs, std::abs(v));
    if (v != std::floor(v)) f.all_integral = false;
  }
  if (floating && !f.all_integral &&
      (max_abs >= 1e8 || (min_abs < 1e-4 && max_abs / min_abs > 1e3))) {
    f.scientific = true;
  }
  if (floating && f.all_integral && max_abs >= 1e8) f.scientific = true;
  for (double v : values) f.width = std::max<int>(f.width, format_value(v, f).size());
  return f;
}

void print_dim(std::ostream& out, const Tensor& t, const std::vector<double>& values, int64_t base,
               int64_t d, const Format& f, bool summarise, int indent) {
  const int64_t n = t.size(d);
  int64_t inner = 1;
  for (int64_t k = d + 1; k < t.dim(); ++k) inner *= t.size(k);
  out << "[";
  const bool cut = summarise && n > 2 * kEdgeItems;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdgeItems) {
      out << (d + 1 == t.dim() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = n - kEdgeItems;
    }
    if (d + 1 == t.dim()) {
      out << std::setw(f.width) << format_value(values[base + i], f);
    } else {
      print_dim(out, t, values, base + i * inner, d + 1, f, summarise, indent + 1);
    }
    if (i + 1 < n) {
      if (d + 1 == t.dim())
        out << ", ";
      else
        out << "," << std::string(t.dim() - d - 1, '\n') << std::string(indent + 1, ' ');
    }
  }
  out << "]";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  NoGradGuard no_grad;
  const std::vector<double> values = to_vector<double>();
  const bool summarise = numel() > kSummariseAbove;
  std::vector<double> shown;
  if (summarise) {
    // Format from the edge values only, as PyTorch does.
    for (size_t i = 0; i < values.size(); i += std::max<size_t>(1, values.size() / 64))
      shown.push_back(values[i]);
  }
  const Format f = choose_format(summarise ? shown : values, is_floating(dtype()));
  std::ostringstream out;
  out << "tensor(";
  if (dim() == 0) {
    out << format_value(values[0], f);
  } else if (numel() == 0) {
    out << "[]";
  } else {
    print_dim(out, *this, values, 0, 0, f, summarise, 7);
  }
  if (device().is_cuda()) out << ", device='" << device() << "'";
  if (dtype() != kFloat32 && dtype() != kInt64) out << ", dtype=" << dtype_name(dtype());
  if (numel() == 0 && dim() != 1) out << ", size=" << shape_str(shape());
  if (grad_fn())
    out << ", grad_fn=<" << grad_fn()->name() << ">";
  else if (requires_grad())
    out << ", requires_grad=True";
  out << ")";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.str(); }

}  // namespace loom
