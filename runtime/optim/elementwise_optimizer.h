// Internal: what Apply and ApplySparse do around an element-wise update rule, written once for
// the four optimizers (sgd.cc, adam.cc, adagrad.cc, rmsprop.cc hold only their rules): check the
// gradient, take the variable's state, and run the rule over every element, or over the rows a
// sparse gradient has.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/update_math.h"
#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::optim::detail {

// The update of one optimizer, element by element, with the state it keeps.
template <typename Rule>
concept UpdateRule = requires(const OptimizerOptions& options, const StepState& state,
                              const Rule& rule, float* p, const float* g,
                              const BufferPointers& buffers, int64_t n) {
  // Whether the variable's state has slot "step".
  { Rule::kCountsSteps } -> std::convertible_to<bool>;
  // The variable's state buffers, in the order the rule gets them.
  { Rule::Slots(options) } -> std::same_as<std::vector<BufferSlot>>;
  // Whether a zero gradient row leaves that row of the variable and of its state exactly as it
  // was, so that ApplySparse may skip absent rows and still equal Apply on the densified gradient.
  { Rule::RowWiseExact(options) } -> std::same_as<bool>;
  // The coefficients of one update.
  { Rule::ForStep(options, state) } -> std::same_as<Rule>;
  // Updates n elements of the variable (p), from its gradient (g), with its state buffers, all
  // at the same offset.
  rule(p, g, buffers, n);
};

// The buffers at element `offset` (absent buffers stay null).
inline BufferPointers Shifted(const BufferPointers& buffers, int64_t offset) {
  BufferPointers out{};
  for (size_t i = 0; i < buffers.size(); ++i) {
    out[i] = buffers[i] == nullptr ? nullptr : buffers[i] + offset;
  }
  return out;
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
      rule(p + offset, g + offset, Shifted(state.buffers, offset), n);
    });
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
                     rule(p + param_offset, g + grad_offset, Shifted(state.buffers, param_offset),
                          n);
                   });
  }
};

}  // namespace autodist::optim::detail
