// Internal: what an optimizer's update rule provides (rules/sgd.h, adam.h, adagrad.h, rmsprop.h),
// so that the CPU loops (elementwise_optimizer.h) and the CUDA kernels (gpu/optim/) apply the
// same rule, element by element, with the same rounding.
#pragma once

#include <concepts>
#include <cstdint>
#include <vector>

#include "runtime/optim/optimizer_state.h"

namespace autodist::optim::detail {

// Calls to a rule's Visit get one variant of its flags; this body records that it was called.
struct VisitProbe {
  bool* called;
  template <typename Variant>
  void operator()(Variant /*variant*/) const {
    *called = true;
  }
};

template <typename Rule>
concept UpdateRule = requires(const OptimizerOptions& options, const StepState& state,
                              const Rule& rule, bool* called) {
  // Whether the variable's state has slot "step".
  { Rule::kCountsSteps } -> std::convertible_to<bool>;
  // The variable's state buffers, in the order the rule gets them (at most kMaxBufferSlots).
  { Rule::Slots(options) } -> std::same_as<std::vector<BufferSlot>>;
  // Whether a zero gradient row leaves that row of the variable and of its state exactly as it
  // was, so that ApplySparse may skip absent rows and still equal Apply on the densified gradient.
  { Rule::RowWiseExact(options) } -> std::same_as<bool>;
  // The coefficients of one update.
  { Rule::ForStep(options, state) } -> std::same_as<Rule>;
  // Calls body(Flags<...>{}) with this update's options as compile-time flags; then
  //   rule.Update(variant, i, p, g, slot0, slot1, slot2)
  // (host and device) updates element i of the variable (p) from its gradient (g) and its state
  // buffers in slot order (null past the last slot).
  rule.Visit(VisitProbe{called});
};

}  // namespace autodist::optim::detail
