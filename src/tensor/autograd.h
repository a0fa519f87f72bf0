// Reverse-mode autograd: each differentiable op records a Node holding what its backward needs;
// backward() runs the nodes in reverse topological order and accumulates into leaves' .grad.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {

// Given the gradient of an op's output, returns one gradient per input, in the order the
// inputs were recorded (an undefined Tensor where an input gets none).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

struct Edge {
  std::shared_ptr<Node> node;  // null: the input needs no gradient
};

class Node {
 public:
  Node(std::string name, std::vector<Edge> next_edges);
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  // Creation order: the engine runs later nodes first when several are ready.
  uint64_t sequence_nr() const { return sequence_nr_; }

  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  // Frees what backward saved; a later apply() then throws (retain_graph was not set).
  virtual void release() {}

 private:
  std::string name_;
  std::vector<Edge> next_edges_;
  uint64_t sequence_nr_;
};

// The node of an op written in C++: `backward` captures the tensors it saved. Save an op's
// own output as out.detach(), never `out` itself, or the node would keep itself alive.
class FunctionNode : public Node {
 public:
  FunctionNode(std::string name, std::vector<Edge> next_edges, BackwardFn backward);
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  void release() override { backward_ = nullptr; }

 private:
  BackwardFn backward_;
};

// Accumulates the gradient into a leaf's .grad and runs its post-accumulate hooks.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::vector<Tensor> apply(const Tensor& grad_output) override;

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// Whether ops record the graph on this thread (true unless a NoGradGuard is alive).
bool grad_mode_enabled();
void set_grad_mode(bool enabled);

class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_mode_enabled()) { set_grad_mode(false); }
  ~NoGradGuard() { set_grad_mode(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when grad mode is on and any defined input requires grad.
bool any_requires_grad(std::initializer_list<Tensor> inputs);

// Records `output` as produced by op `name` from `inputs` when any_requires_grad(inputs):
// output gets a FunctionNode with `backward`. Returns output for chaining.
Tensor record(const char* name, Tensor output, std::initializer_list<Tensor> inputs,
              BackwardFn backward);
Tensor record(const char* name, Tensor output, const std::vector<Tensor>& inputs,
              BackwardFn backward);

// The engine: differentiates `root` with respect to every leaf in its graph, then runs the
// callbacks queued during it.
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

// Runs `callback` on this thread once the backward() now running has gone through the whole
// graph, before backward() returns; called from a hook (DistributedDataParallel makes the
// compute stream wait for its all-reduces there). Callbacks run in the order they were queued;
// a backward that throws drops them. Throws when no backward is running on this thread.
void queue_backward_callback(std::function<void()> callback);

}  // namespace loom
