// The autograd graph's nodes, grad mode, and the engine that runs backward().
#include "loom/tensor/autograd.h"

#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "loom/tensor/autocast.h"
#include "loom/tensor/primitives.h"

namespace loom {

namespace {

std::atomic<uint64_t> next_sequence_nr{0};
thread_local bool grad_mode = true;
// The callbacks of the backward running on this thread (null when none is).
thread_local std::vector<std::function<void()>>* backward_callbacks = nullptr;

// Installs a backward's callback list for its duration (a hook may run a nested backward).
class CallbackScope {
 public:
  CallbackScope() : previous_(backward_callbacks) { backward_callbacks = &callbacks_; }
  ~CallbackScope() { backward_callbacks = previous_; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
  // Runs the queued callbacks, also those a callback queues.
  void run() {
    for (size_t i = 0; i < callbacks_.size(); ++i) {
      std::function<void()> callback = std::move(callbacks_[i]);
      callback();
    }
    callbacks_.clear();
  }

 private:
  std::vector<std::function<void()>> callbacks_;
  std::vector<std::function<void()>>* previous_;
};

// The node a gradient for `t` flows into: its grad_fn, or (for a leaf that requires grad)
// the leaf's AccumulateGrad, shared by every op that uses the leaf.
Edge edge_of(const Tensor& t) {
  if (!t.defined()) return {};
  TensorImpl& impl = *t.impl();
  if (impl.grad_fn) return {impl.grad_fn};
  if (!impl.requires_grad) return {};
  std::shared_ptr<Node> acc = impl.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl());
    impl.grad_accumulator = acc;
  }
  return {acc};
}

// A gradient the engine may later add into in place: never an alias of a user's tensor.
Tensor owned_copy(const Tensor& g, MemoryFormat format) {
  Tensor copy = empty(g.shape(), g.options(), format);
  detail::copy_same_device(copy, g);
  return copy;
}

}  // namespace

Node::Node(std::string name, std::vector<Edge> next_edges)
    : name_(std::move(name)),
      next_edges_(std::move(next_edges)),
      sequence_nr_(next_sequence_nr++) {}

FunctionNode::FunctionNode(std::string name, std::vector<Edge> next_edges, BackwardFn backward)
    : Node(std::move(name), std::move(next_edges)), backward_(std::move(backward)) {}

std::vector<Tensor> FunctionNode::apply(const Tensor& grad_output) {
  LOOM_CHECK(backward_ != nullptr, "backward: trying to go through the graph a second time ",
             "(at ", name(), "), but its saved tensors were freed after the first backward(); ",
             "pass retain_graph=true to the first backward() to keep them");
  std::vector<Tensor> grads = backward_(grad_output);
  LOOM_ASSERT(grads.size() == next_edges().size(), "node ", name(), " returned ", grads.size(),
              " gradients for ", next_edges().size(), " inputs");
  return grads;
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
    : Node("AccumulateGrad", {}), leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad_output) {
  TensorImpl& leaf = *leaf_;
  LOOM_ASSERT(grad_output.shape() == leaf.shape, "gradient shape ", shape_str(grad_output.shape()),
              " for a leaf of shape ", shape_str(leaf.shape));
  if (!leaf.grad.defined()) {
    // Take the incoming buffer when nothing else can see it; otherwise copy, because later
    // accumulations write into .grad in place. Either way .grad has the leaf's own layout
    // (channels-last or NCHW), as PyTorch's gradient layout contract has it.
    const MemoryFormat format = Tensor(leaf_).suggest_memory_format();
    const bool exclusive = grad_output.impl().use_count() == 1 &&
                           grad_output.storage().use_count() == 1 &&
                           grad_output.is_contiguous(format);
    leaf.grad = exclusive ? grad_output.detach() : owned_copy(grad_output, format);
  } else {
    detail::accumulate(leaf.grad, grad_output);
  }
  Tensor handle(leaf_);
  for (auto& entry : leaf.post_accumulate_hooks) entry.second(handle);
  return {};
}

bool grad_mode_enabled() { return grad_mode; }
void set_grad_mode(bool enabled) { grad_mode = enabled; }

bool any_requires_grad(std::initializer_list<Tensor> inputs) {
  if (!grad_mode) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

Tensor record(const char* name, Tensor output, const std::vector<Tensor>& inputs,
              BackwardFn backward) {
  if (!grad_mode) return output;
  bool needed = false;
  for (const Tensor& t : inputs) needed = needed || (t.defined() && t.requires_grad());
  if (!needed) return output;
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(edge_of(t));
  LOOM_ASSERT(!output.impl()->grad_fn, "record: output of ", name, " already has a grad_fn");
  output.impl()->grad_fn =
      std::make_shared<FunctionNode>(name, std::move(edges), std::move(backward));
  return output;
}

Tensor record(const char* name, Tensor output, std::initializer_list<Tensor> inputs,
              BackwardFn backward) {
  return record(name, std::move(output), std::vector<Tensor>(inputs), std::move(backward));
}

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  LOOM_CHECK(root.requires_grad(), "backward: the tensor does not require grad and has no ",
             "grad_fn (did every input have requires_grad=false, or was it computed under a ",
             "NoGradGuard?)");
  Tensor seed = gradient;
  if (!seed.defined()) {
    LOOM_CHECK(root.numel() == 1, "backward: a gradient can be created implicitly only for a ",
               "tensor with one element; this one has shape ", shape_str(root.shape()),
               " (pass the gradient explicitly)");
    seed = ones(root.shape(), root.options());
  } else {
    LOOM_CHECK(seed.shape() == root.shape() && seed.dtype() == root.dtype() &&
                   seed.device() == root.device(),
               "backward: gradient ", shape_str(seed.shape()), " ", seed.dtype(), " on ",
               seed.device(), " does not match the tensor ", shape_str(root.shape()), " ",
               root.dtype(), " on ", root.device());
  }
  NoGradGuard no_grad;  // backward itself is not recorded (no higher-order gradients)
  // Backward formulas run in the dtypes the forward saved: autocast would recast them.
  Autocast no_autocast(false);
  CallbackScope callbacks;

  const Edge root_edge = edge_of(root);
  // Count, for every node reachable from the root, how many edges lead into it.
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack{root_edge.node.get()};
  std::unordered_set<Node*> seen{root_edge.node.get()};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->next_edges()) {
      if (!e.node) continue;
      ++dependencies[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }

  // Ready nodes run latest-created first, which keeps the order close to the reverse of the
  // forward pass (DistributedDataParallel's buckets fill in that order).
  auto later_first = [](Node* a, Node* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  std::unordered_map<Node*, Tensor> pending;  // gradient summed so far for each node
  std::unordered_map<Node*, bool> pending_owned;
  pending[root_edge.node.get()] = seed;
  ready.push(root_edge.node.get());

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    Tensor grad = std::move(pending[node]);
    pending.erase(node);
    std::vector<Tensor> input_grads = node->apply(grad);
    grad = Tensor();
    const auto& edges = node->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      Node* next = edges[i].node.get();
      if (!next) continue;
      LOOM_ASSERT(input_grads[i].defined(), "node ", node->name(),
                  " returned no gradient for input ", i);
      auto it = pending.find(next);
      if (it == pending.end()) {
        pending.emplace(next, input_grads[i]);
        pending_owned[next] = false;
      } else {
        if (!pending_owned[next]) {
          it->second = owned_copy(it->second, it->second.suggest_memory_format());
          pending_owned[next] = true;
        }
        detail::accumulate(it->second, input_grads[i]);
      }
      if (--dependencies[next] == 0) ready.push(next);
    }
    if (!retain_graph) node->release();
  }
  callbacks.run();
}

void queue_backward_callback(std::function<void()> callback) {
  LOOM_CHECK(backward_callbacks != nullptr,
             "queue_backward_callback: no backward() is running on this thread");
  backward_callbacks->push_back(std::move(callback));
}

}  // namespace loom
