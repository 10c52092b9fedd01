#include "runtime/ops/kernel.h"

#include "runtime/common/error.h"

namespace autodist::ops {

ForwardContext::ForwardContext(std::vector<const Tensor*> inputs, size_t num_outputs, bool training,
                               std::mt19937_64* rng, const NodeInfo* node)
    : inputs_(std::move(inputs)),
      outputs_(num_outputs),
      training_(training),
      rng_(rng),
      node_(node) {}

const Tensor& ForwardContext::input(size_t i) const {
  AD_CHECK(has_input(i), kInvalidArgument, "{}: input {} is required", Describe(), i);
  return *inputs_[i];
}

void ForwardContext::set_output(size_t i, Tensor value) {
  AD_CHECK(i < outputs_.size(), kInternal, "{}: output {} out of range", Describe(), i);
  outputs_[i] = std::move(value);
}

std::mt19937_64& ForwardContext::rng() {
  AD_CHECK(rng_ != nullptr, kInternal, "{}: no random engine", Describe());
  return *rng_;
}

std::string ForwardContext::Describe() const { return node_ ? node_->Describe() : "kernel"; }

BackwardContext::BackwardContext(std::vector<const Tensor*> inputs,
                                 std::vector<const Tensor*> outputs,
                                 std::vector<const Tensor*> output_grads,
                                 std::vector<bool> needs_grad, KernelState* state,
                                 const NodeInfo* node)
    : inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      output_grads_(std::move(output_grads)),
      needs_grad_(std::move(needs_grad)),
      input_grads_(inputs_.size()),
      sparse_grads_(inputs_.size()),
      state_(state),
      node_(node) {}

const Tensor& BackwardContext::input(size_t i) const {
  AD_CHECK(has_input(i), kInternal, "{}: backward reads input {}, which was not kept", Describe(),
           i);
  return *inputs_[i];
}

const Tensor& BackwardContext::output(size_t i) const {
  AD_CHECK(i < outputs_.size() && outputs_[i] != nullptr, kInternal,
           "{}: backward reads output {}, which was not kept", Describe(), i);
  return *outputs_[i];
}

void BackwardContext::set_input_grad(size_t i, Tensor grad) {
  AD_CHECK(i < input_grads_.size(), kInternal, "{}: gradient for input {} out of range", Describe(),
           i);
  input_grads_[i] = std::move(grad);
}

void BackwardContext::set_input_sparse_grad(size_t i, SparseGradient grad) {
  AD_CHECK(i < sparse_grads_.size(), kInternal, "{}: gradient for input {} out of range",
           Describe(), i);
  sparse_grads_[i] = std::make_unique<SparseGradient>(std::move(grad));
}

std::string BackwardContext::Describe() const { return node_ ? node_->Describe() : "kernel"; }

void OpKernel::Backward(BackwardContext& ctx) const {
  (void)ctx;
  Fail(ErrorCode::kInvalidArgument, "{}: this op has no gradient", description_);
}

}  // namespace autodist::ops
