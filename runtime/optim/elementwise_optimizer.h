// Internal: what Apply and ApplySparse do around an element-wise update rule, written once for
// the four optimizers (rules/ holds only their rules): check the gradient, take the variable's
// state, and run the rule over every element, or over the rows a sparse gradient has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/rules/update_rule.h"
#include "runtime/optim/update_math.h"
#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::optim::detail {

// The buffers at element `offset` (absent buffers stay null).
inline BufferPointers Shifted(const BufferPointers& buffers, int64_t offset) {
  BufferPointers out{};
  for (size_t i = 0; i < buffers.size(); ++i) {
    out[i] = buffers[i] == nullptr ? nullptr : buffers[i] + offset;
  }
  return out;
}

// Runs the rule's variant over n elements. The restrict pointers and `omp simd` let the loop
// vectorize: a variable, its gradient and its state buffers never overlap.
template <typename Rule, typename Variant>
void RunElements(const Rule& rule, Variant variant, float* __restrict p, const float* __restrict g,
                 const BufferPointers& buffers, int64_t n) {
  float* __restrict slot0 = buffers[0];
  float* __restrict slot1 = buffers[1];
  float* __restrict slot2 = buffers[2];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) rule.Update(variant, i, p, g, slot0, slot1, slot2);
}

// Runs the rule over n elements at the given pointers.
template <typename Rule>
void RunRule(const Rule& rule, float* p, const float* g, const BufferPointers& buffers, int64_t n) {
  rule.Visit([&](auto variant) { RunElements(rule, variant, p, g, buffers, n); });
}

// The optimizer that applies `Rule`: MakeSgd & co. return ElementwiseOptimizer<SgdRule> & co.
template <UpdateRule Rule>
class ElementwiseOptimizer final : public StatefulOptimizer {
 public:
  explicit ElementwiseOptimizer(const OptimizerOptions& options)
      : StatefulOptimizer(options, Rule::kCountsSteps, Rule::Slots(options)) {}

  void Apply(const std::string& name, tensor::Tensor& param, const tensor::Tensor& grad) override {
    CheckDense(name, param, grad);
    const StepState state = BeginStep(name, param);
    const Rule rule = Rule::ForStep(options_, state);
    auto* p = param.data<float>();
    const auto* g = grad.data<float>();
    ForAllElements(param.numel(), [&](int64_t offset, int64_t n) {
      RunRule(rule, p + offset, g + offset, Shifted(state.buffers, offset), n);
    });
  }

  bool SparseUpdatesChangeOnlyPresentRows() const override {
    return Rule::RowWiseExact(options_) || options_.lazy_sparse;
  }

  void ApplySparse(const std::string& name, tensor::Tensor& param,
                   const tensor::SparseGradient& grad) override {
    // Absent rows are zero rows: they still move, or their state still decays, unless the rule
    // is row-wise exact or lazy_sparse asks to leave them alone.
    if (!Rule::RowWiseExact(options_) && !options_.lazy_sparse) {
      Optimizer::ApplySparse(name, param, grad);
      return;
    }
    CheckSparse(name, param, grad);
    const StepState state = BeginStep(name, param);
    const Rule rule = Rule::ForStep(options_, state);
    auto* p = param.data<float>();
    const auto* g = grad.values.data<float>();
    ForPresentRows(grad.indices.ToInt64Vector("sparse gradient"), RowSize(param),
                   [&](int64_t param_offset, int64_t grad_offset, int64_t n) {
                     RunRule(rule, p + param_offset, g + grad_offset,
                             Shifted(state.buffers, param_offset), n);
                   });
  }
};

}  // namespace autodist::optim::detail
