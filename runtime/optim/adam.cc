// Adam and AdamW as torch.optim.Adam / AdamW (PyTorch 1.13, _single_tensor_adam[w]), per element
// at step t (counted per variable, from 1):
//   adam:  g = g + weight_decay * p                  (L2, when weight_decay != 0)
//   adamw: p = p * (1 - lr * weight_decay)           (decoupled, before the moments)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   v_max = max(v_max, v); use v_max for v           (amsgrad)
//   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// with the scalar coefficients computed in double and rounded to float, as torch does.
#include <cmath>
#include <vector>

#include "runtime/optim/elementwise_optimizer.h"
#include "runtime/optim/optimizers.h"
#include "runtime/optim/update_math.h"

namespace autodist::optim::detail {
namespace {

// The update above as an UpdateRule (elementwise_optimizer.h).
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

  // buffers: m, v and v_max (null without amsgrad), in slot order.
  void operator()(float* p, const float* g, const BufferPointers& buffers, int64_t n) const {
    DispatchFlags(
        [&]<bool kL2, bool kDecoupled, bool kAmsgrad>() {
          Run<kL2, kDecoupled, kAmsgrad>(p, g, buffers[0], buffers[1], buffers[2], n);
        },
        l2, decoupled, amsgrad);
  }

  template <bool kL2, bool kDecoupled, bool kAmsgrad>
  void Run(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
           float* __restrict v_max, int64_t n) const {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float grad = g[i];
      if constexpr (kL2) grad = Fma(p[i], weight_decay, grad);
      if constexpr (kDecoupled) p[i] *= decay_factor;
      m[i] = Fma(grad, one_minus_beta1, m[i] * beta1);
      v[i] = Fma(one_minus_beta2 * grad, grad, v[i] * beta2);
      float second = v[i];
      if constexpr (kAmsgrad) second = v_max[i] = Maximum(v_max[i], v[i]);
      const float denom = std::sqrt(second) / bias_correction2_sqrt + eps;
      p[i] += neg_step_size * m[i] / denom;
    }
  }
};

}  // namespace

std::unique_ptr<Optimizer> MakeAdam(const OptimizerOptions& options) {
  return std::make_unique<ElementwiseOptimizer<AdamRule>>(options);
}

}  // namespace autodist::optim::detail
