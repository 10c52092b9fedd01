// Adam and AdamW as torch.optim.Adam / AdamW (PyTorch 1.13, _single_tensor_adam[w]), per element
// at step t (counted per variable, from 1):
//   adam:  g = g + weight_decay * p                  (L2, when weight_decay != 0)
//   adamw: p = p * (1 - lr * weight_decay)           (decoupled, before the moments)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   v_max = max(v_max, v); use v_max for v           (amsgrad)
//   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// with the scalar coefficients computed in double and rounded to float, as torch does.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/common/host_device.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/rules/element_math.h"

namespace autodist::optim::detail {

// The update above as an UpdateRule (update_rule.h).
struct AdamRule {
  static constexpr bool kCountsSteps = true;

  static std::vector<BufferSlot> Slots(const OptimizerOptions& o) {
    std::vector<BufferSlot> slots{{"exp_avg"}, {"exp_avg_sq"}};
    if (o.amsgrad) slots.push_back({"max_exp_avg_sq"});
    return slots;
  }

  // Moments decay on zero rows too, so only lazy_sparse goes row by row.
  static bool RowWiseExact(const OptimizerOptions& /*o*/) { return false; }

  bool l2;         // adam with weight_decay != 0
  bool decoupled;  // adamw
  bool amsgrad;
  float weight_decay;
  float decay_factor;  // adamw: 1 - lr * weight_decay
  float beta1;
  float one_minus_beta1;
  float beta2;
  float one_minus_beta2;
  float bias_correction2_sqrt;
  float eps;
  float neg_step_size;  // -lr / (1 - beta1^t)

  static AdamRule ForStep(const OptimizerOptions& o, const StepState& state) {
    const auto t = static_cast<double>(state.step);
    const bool decoupled = o.name == "adamw";
    const double bias_correction1 = 1.0 - std::pow(o.beta1, t);
    const double bias_correction2 = 1.0 - std::pow(o.beta2, t);
    AdamRule rule{};
    rule.l2 = !decoupled && o.weight_decay != 0;
    rule.decoupled = decoupled;
    rule.amsgrad = o.amsgrad;
    rule.weight_decay = static_cast<float>(o.weight_decay);
    rule.decay_factor = static_cast<float>(1.0 - o.lr * o.weight_decay);
    rule.beta1 = static_cast<float>(o.beta1);
    rule.one_minus_beta1 = static_cast<float>(1.0 - o.beta1);
    rule.beta2 = static_cast<float>(o.beta2);
    rule.one_minus_beta2 = static_cast<float>(1.0 - o.beta2);
    rule.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
    rule.eps = static_cast<float>(o.eps);
    rule.neg_step_size = static_cast<float>(-(o.lr / bias_correction1));
    return rule;
  }

  template <typename Body>
  void Visit(Body&& body) const {
    DispatchFlags(body, l2, decoupled, amsgrad);
  }

  // Element i; m, v and v_max are slots 0, 1 and 2 (v_max only with amsgrad).
  template <bool kL2, bool kDecoupled, bool kAmsgrad>
  AUTODIST_HOST_DEVICE void Update(Flags<kL2, kDecoupled, kAmsgrad> /*variant*/, int64_t i,
                                   float* p, const float* g, float* m, float* v,
                                   float* v_max) const {
    float grad = g[i];
    if constexpr (kL2) grad = Fma(p[i], weight_decay, grad);
    if constexpr (kDecoupled) p[i] *= decay_factor;
    m[i] = Fma(grad, one_minus_beta1, m[i] * beta1);
    v[i] = Fma(one_minus_beta2 * grad, grad, v[i] * beta2);
    float second = v[i];
    if constexpr (kAmsgrad) second = v_max[i] = Maximum(v_max[i], v[i]);
    const float denom = Sqrt(second) / bias_correction2_sqrt + eps;
    p[i] += neg_step_size * m[i] / denom;
  }
};

}  // namespace autodist::optim::detail
