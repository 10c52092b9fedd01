// RMSprop as torch.optim.RMSprop (PyTorch 1.13, _single_tensor_rmsprop), per element:
//   g = g + weight_decay * p                       (when weight_decay != 0)
//   square_avg = alpha * square_avg + (1 - alpha) * g * g
//   centered: grad_avg = alpha * grad_avg + (1 - alpha) * g;
//             avg = sqrt(square_avg - grad_avg * grad_avg) + eps
//   else:     avg = sqrt(square_avg) + eps
//   momentum > 0: buf = momentum * buf + g / avg;  p = p - lr * buf
//   else:         p = p - lr * g / avg
// The step count is kept (slot "step") as torch keeps it, although the update does not use it.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/common/host_device.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/rules/element_math.h"

namespace autodist::optim::detail {

// The update above as an UpdateRule (update_rule.h).
struct RmspropRule {
  static constexpr bool kCountsSteps = true;

  static std::vector<BufferSlot> Slots(const OptimizerOptions& o) {
    std::vector<BufferSlot> slots{{"square_avg"}};
    if (o.momentum > 0) slots.push_back({"momentum_buffer"});
    if (o.centered) slots.push_back({"grad_avg"});
    return slots;
  }

  // square_avg decays on zero rows, so only lazy_sparse goes row by row.
  static bool RowWiseExact(const OptimizerOptions& /*o*/) { return false; }

  bool has_weight_decay;
  bool centered;
  bool has_momentum;
  float weight_decay;
  float alpha;
  float one_minus_alpha;
  float eps;
  float momentum;
  float neg_lr;

  static RmspropRule ForStep(const OptimizerOptions& o, const StepState& /*state*/) {
    RmspropRule rule{};
    rule.has_weight_decay = o.weight_decay != 0;
    rule.centered = o.centered;
    rule.has_momentum = o.momentum > 0;
    rule.weight_decay = static_cast<float>(o.weight_decay);
    rule.alpha = static_cast<float>(o.alpha);
    rule.one_minus_alpha = static_cast<float>(1.0 - o.alpha);
    rule.eps = static_cast<float>(o.eps);
    rule.momentum = static_cast<float>(o.momentum);
    rule.neg_lr = static_cast<float>(-o.lr);
    return rule;
  }

  template <typename Body>
  void Visit(Body&& body) const {
    DispatchFlags(body, has_weight_decay, centered, has_momentum);
  }

  // Element i; the slots in order: square_avg, then momentum_buffer and grad_avg where kept.
  template <bool kDecay, bool kCentered, bool kMomentum>
  AUTODIST_HOST_DEVICE void Update(Flags<kDecay, kCentered, kMomentum> /*variant*/, int64_t i,
                                   float* p, const float* g, float* square_avg, float* slot1,
                                   float* slot2) const {
    float* buf = slot1;
    float* grad_avg = kMomentum ? slot2 : slot1;
    float grad = g[i];
    if constexpr (kDecay) grad = Fma(p[i], weight_decay, grad);
    square_avg[i] = Fma(one_minus_alpha * grad, grad, square_avg[i] * alpha);
    float avg = 0;
    if constexpr (kCentered) {
      grad_avg[i] = Fma(grad, one_minus_alpha, grad_avg[i] * alpha);
      avg = Sqrt(Fma(-grad_avg[i], grad_avg[i], square_avg[i]));
    } else {
      avg = Sqrt(square_avg[i]);
    }
    avg += eps;
    if constexpr (kMomentum) {
      buf[i] = buf[i] * momentum + grad / avg;
      p[i] = Fma(buf[i], neg_lr, p[i]);
    } else {
      p[i] += neg_lr * grad / avg;
    }
  }
};

}  // namespace autodist::optim::detail
