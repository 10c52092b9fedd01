// SGD as torch.optim.SGD (PyTorch 1.13, _single_tensor_sgd), per element:
//   d = g + weight_decay * p                        (when weight_decay != 0)
//   buf = d on the first step, else momentum * buf + (1 - dampening) * d   (momentum != 0)
//   d = nesterov ? d + momentum * buf : buf
//   p = p - lr * d
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/common/host_device.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/rules/element_math.h"

namespace autodist::optim::detail {

// The update above as an UpdateRule (update_rule.h).
struct SgdRule {
  static constexpr bool kCountsSteps = false;

  // A momentum buffer with momentum; without, SGD keeps no state.
  static std::vector<BufferSlot> Slots(const OptimizerOptions& o) {
    return o.momentum != 0 ? std::vector<BufferSlot>{{"momentum_buffer"}}
                           : std::vector<BufferSlot>{};
  }

  // Without momentum and weight decay a zero row changes nothing (p - lr * 0 = p). Otherwise
  // absent rows still move (momentum).
  static bool RowWiseExact(const OptimizerOptions& o) {
    return o.momentum == 0 && o.weight_decay == 0;
  }

  bool has_weight_decay;
  bool has_momentum;
  bool nesterov;
  bool first;  // the momentum buffer is created by this step
  float weight_decay;
  float momentum;
  float one_minus_dampening;
  float neg_lr;

  static SgdRule ForStep(const OptimizerOptions& o, const StepState& state) {
    SgdRule rule{};
    rule.has_weight_decay = o.weight_decay != 0;
    rule.has_momentum = o.momentum != 0;
    rule.nesterov = o.nesterov;
    rule.first = state.first;
    rule.weight_decay = static_cast<float>(o.weight_decay);
    rule.momentum = static_cast<float>(o.momentum);
    rule.one_minus_dampening = static_cast<float>(1.0 - o.dampening);
    rule.neg_lr = static_cast<float>(-o.lr);
    return rule;
  }

  template <typename Body>
  void Visit(Body&& body) const {
    DispatchFlags(body, has_weight_decay, has_momentum, nesterov, first);
  }

  // Element i; buf: the momentum buffer (slot 0).
  template <bool kDecay, bool kMomentum, bool kNesterov, bool kFirst>
  AUTODIST_HOST_DEVICE void Update(Flags<kDecay, kMomentum, kNesterov, kFirst> /*variant*/,
                                   int64_t i, float* p, const float* g, float* buf,
                                   float* /*unused*/, float* /*unused*/) const {
    float d = g[i];
    if constexpr (kDecay) d = Fma(p[i], weight_decay, d);
    if constexpr (kMomentum) {
      buf[i] = kFirst ? d : Fma(d, one_minus_dampening, buf[i] * momentum);
      d = kNesterov ? Fma(buf[i], momentum, d) : buf[i];
    }
    p[i] = Fma(d, neg_lr, p[i]);
  }
};

}  // namespace autodist::optim::detail
