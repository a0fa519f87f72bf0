// cat and stack. cat copies each input into its slice of the output, and its backward
// hands each input the matching narrow of the gradient; stack is unsqueeze + cat.
#include "loom/ops/shape_ops.h"

#include "loom/tensor/autograd.h"

namespace loom {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  LOOM_CHECK(!tensors.empty(), "cat: expects a non-empty list of tensors");
  const Tensor& first = tensors[0];
  LOOM_CHECK(first.defined(), "cat: input 0 is undefined");
  LOOM_CHECK(first.dim() > 0,
             "cat: input 0 is a 0-d tensor and cannot be concatenated; "
             "use stack or unsqueeze it first");
  const int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape out_shape = first.shape();
  out_shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    LOOM_CHECK(t.defined(), "cat: input ", i, " is undefined");
    LOOM_CHECK(t.dtype() == first.dtype() && t.device() == first.device(), "cat: input ", i, " is ",
               dtype_name(t.dtype()), " on ", t.device(), " but input 0 is ",
               dtype_name(first.dtype()), " on ", first.device());
    bool same = t.dim() == first.dim();
    for (int64_t k = 0; same && k < t.dim(); ++k) same = k == d || t.size(k) == first.size(k);
    LOOM_CHECK(same, "cat: input ", i, " has shape ", shape_str(t.shape()), " but input 0 has ",
               shape_str(first.shape()), "; shapes must match except in dimension ", d);
    out_shape[d] += t.size(d);
  }
  Tensor out = empty(out_shape, first.options());
  std::vector<int64_t> starts, lengths;
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    starts.push_back(start);
    lengths.push_back(t.size(d));
    if (t.numel() > 0) out.narrow(d, start, t.size(d)).copy_(t);
    start += t.size(d);
  }
  return record("cat", out, tensors, [starts, lengths, d](const Tensor& g) {
    std::vector<Tensor> grads;
    for (size_t i = 0; i < starts.size(); ++i) grads.push_back(g.narrow(d, starts[i], lengths[i]));
    return grads;
  });
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  LOOM_CHECK(!tensors.empty(), "stack: expects a non-empty list of tensors");
  LOOM_CHECK(tensors[0].defined(), "stack: input 0 is undefined");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    LOOM_CHECK(tensors[i].defined(), "stack: input ", i, " is undefined");
    LOOM_CHECK(tensors[i].shape() == tensors[0].shape(), "stack: input ", i, " has shape ",
               shape_str(tensors[i].shape()), " but input 0 has ", shape_str(tensors[0].shape()),
               "; stack needs equal shapes");
    expanded.push_back(tensors[i].unsqueeze(d));
  }
  return cat(expanded, d);
}

}  // namespace loom
