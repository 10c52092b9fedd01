// Adagrad as torch.optim.Adagrad (PyTorch 1.13, _single_tensor_adagrad), per element at step t
// (counted per variable, from 1):
//   g = g + weight_decay * p                       (when weight_decay != 0)
//   sum = sum + g * g                              (sum starts at initial_accumulator_value)
//   p = p - (lr / (1 + (t - 1) * lr_decay)) * g / (sqrt(sum) + eps)
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/common/host_device.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/rules/element_math.h"

namespace autodist::optim::detail {

// The update above as an UpdateRule (update_rule.h).
struct AdagradRule {
  static constexpr bool kCountsSteps = true;

  static std::vector<BufferSlot> Slots(const OptimizerOptions& o) {
    return {{"sum", static_cast<float>(o.initial_accumulator_value)}};
  }

  // A zero row adds nothing to `sum` and moves nothing (p - clr * 0 / std = p) as long as
  // std > 0, which eps > 0 or a positive initial sum guarantees; with neither, the dense update
  // makes never-seen rows 0/0 = NaN, and we keep that (PyTorch's) result. Weight decay moves
  // zero rows.
  static bool RowWiseExact(const OptimizerOptions& o) {
    return o.weight_decay == 0 && (o.eps > 0 || o.initial_accumulator_value > 0);
  }

  bool has_weight_decay;
  float weight_decay;
  float eps;
  float neg_clr;  // -lr / (1 + (t - 1) * lr_decay)

  static AdagradRule ForStep(const OptimizerOptions& o, const StepState& state) {
    const auto t = static_cast<double>(state.step);
    AdagradRule rule{};
    rule.has_weight_decay = o.weight_decay != 0;
    rule.weight_decay = static_cast<float>(o.weight_decay);
    rule.eps = static_cast<float>(o.eps);
    rule.neg_clr = static_cast<float>(-(o.lr / (1.0 + (t - 1.0) * o.lr_decay)));
    return rule;
  }

  template <typename Body>
  void Visit(Body&& body) const {
    DispatchFlags(body, has_weight_decay);
  }

  // Element i; sum is slot 0.
  template <bool kDecay>
  AUTODIST_HOST_DEVICE void Update(Flags<kDecay> /*variant*/, int64_t i, float* p, const float* g,
                                   float* sum, float* /*unused*/, float* /*unused*/) const {
    float grad = g[i];
    if constexpr (kDecay) grad = Fma(p[i], weight_decay, grad);
    sum[i] = Fma(grad, grad, sum[i]);
    const float denom = Sqrt(sum[i]) + eps;
    p[i] += neg_clr * grad / denom;
  }
};

}  // namespace autodist::optim::detail
