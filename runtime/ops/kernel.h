// The kernel interface. A kernel implements one ONNX op: attributes are parsed once in its
// constructor (from NodeInfo), Forward computes outputs from inputs, Backward computes the
// gradients of the inputs from the gradients of the outputs. The executor (runtime/exec) knows
// no op; kernels know no graph. Kernels never modify their inputs: outputs may share storage
// with inputs (views) but are never written after Forward returns.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/node_info.h"
#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops {

using tensor::DType;
using tensor::Shape;
using tensor::SparseGradient;
using tensor::Tensor;

// What a kernel keeps from Forward for Backward beyond inputs and outputs (masks, statistics).
struct KernelState {
  virtual ~KernelState() = default;
};

class ForwardContext {
 public:
  ForwardContext(std::vector<const Tensor*> inputs, size_t num_outputs, bool training,
                 std::mt19937_64* rng, const NodeInfo* node);

  size_t num_inputs() const { return inputs_.size(); }
  // Whether optional input i is present.
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // Input i; throws InvalidArgument naming the node when it is absent.
  const Tensor& input(size_t i) const;

  size_t num_outputs() const { return outputs_.size(); }
  void set_output(size_t i, Tensor value);
  Tensor& output(size_t i) { return outputs_[i]; }

  // Training mode: Dropout drops, BatchNormalization uses batch statistics.
  bool training() const { return training_; }
  // The session's random engine (seeded; checkpointed with the run).
  std::mt19937_64& rng();

  void save_state(std::unique_ptr<KernelState> state) { state_ = std::move(state); }
  std::unique_ptr<KernelState> take_state() { return std::move(state_); }
  std::vector<Tensor> take_outputs() { return std::move(outputs_); }

  // "Gemm node 'fc1' (opset 14)".
  std::string Describe() const;

 private:
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor> outputs_;
  bool training_;
  std::mt19937_64* rng_;
  const NodeInfo* node_;
  std::unique_ptr<KernelState> state_;
};

class BackwardContext {
 public:
  BackwardContext(std::vector<const Tensor*> inputs, std::vector<const Tensor*> outputs,
                  std::vector<const Tensor*> output_grads, std::vector<bool> needs_grad,
                  KernelState* state, const NodeInfo* node);

  const Tensor& input(size_t i) const;
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& output(size_t i) const;
  // Gradient of output i, or nullptr when no gradient flows into it (treat as zero).
  const Tensor* output_grad(size_t i) const {
    return i < output_grads_.size() ? output_grads_[i] : nullptr;
  }
  // Whether the gradient of input i is wanted.
  bool needs_grad(size_t i) const { return i < needs_grad_.size() && needs_grad_[i]; }

  void set_input_grad(size_t i, Tensor grad);
  void set_input_sparse_grad(size_t i, SparseGradient grad);

  KernelState* state() const { return state_; }
  std::string Describe() const;

  std::vector<Tensor> take_input_grads() { return std::move(input_grads_); }
  std::vector<std::unique_ptr<SparseGradient>> take_sparse_grads() {
    return std::move(sparse_grads_);
  }

 private:
  std::vector<const Tensor*> inputs_;
  std::vector<const Tensor*> outputs_;
  std::vector<const Tensor*> output_grads_;
  std::vector<bool> needs_grad_;
  std::vector<Tensor> input_grads_;
  std::vector<std::unique_ptr<SparseGradient>> sparse_grads_;
  KernelState* state_;
  const NodeInfo* node_;
};

// The state Forward saved, as S; throws Internal naming the node when there is none.
template <typename S>
const S& SavedState(const BackwardContext& ctx) {
  const auto* state = dynamic_cast<const S*>(ctx.state());
  AD_CHECK(state != nullptr, kInternal, "{}: backward without the state its forward saved",
           ctx.Describe());
  return *state;
}

class OpKernel {
 public:
  explicit OpKernel(const NodeInfo& node) : description_(node.Describe()) {}
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  virtual void Forward(ForwardContext& ctx) const = 0;

  // Default: the op has no gradient; throws naming the node.
  virtual void Backward(BackwardContext& ctx) const;

  // Whether a gradient can flow into input i (false for indices, shapes, axes...).
  virtual bool IsDifferentiable(size_t input) const {
    (void)input;
    return true;
  }

  // Which forward values Backward reads, so the executor frees the others early.
  virtual bool BackwardNeedsInput(size_t input) const {
    (void)input;
    return true;
  }
  virtual bool BackwardNeedsOutput(size_t output) const {
    (void)output;
    return true;
  }

  // Whether Backward only forwards the gradient of output 0 to input 0 unchanged (Identity):
  // then a sparse gradient passes through as it is instead of being made dense.
  virtual bool PassesGradientThrough() const { return false; }

  // Whether this kernel can apply `activation` to its output itself when its NodeInfo says so
  // (NodeInfo::fused_activation): the planner fuses an activation only into such a kernel.
  virtual bool TakesFusedActivation(FusedActivation activation) const {
    (void)activation;
    return false;
  }

  // Whether this kernel can add a bias [N] to every row of its output itself, taking it as one
  // more input (NodeInfo::fused_bias): the planner fuses an Add of a bias only into such a kernel.
  virtual bool TakesFusedBias() const { return false; }

  // Replica-local state written by a training forward: (output, input) pairs whose output
  // replaces the initializer feeding the input (BatchNormalization's running statistics).
  virtual std::vector<std::pair<size_t, size_t>> StateUpdates() const { return {}; }

  const std::string& description() const { return description_; }

 private:
  std::string description_;
};

}  // namespace autodist::ops
