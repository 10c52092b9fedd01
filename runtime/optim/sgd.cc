// SGD as torch.optim.SGD (PyTorch 1.13, _single_tensor_sgd), per element:
//   d = g + weight_decay * p                        (when weight_decay != 0)
//   buf = d on the first step, else momentum * buf + (1 - dampening) * d   (momentum != 0)
//   d = nesterov ? d + momentum * buf : buf
//   p = p - lr * d
#include <vector>

#include "runtime/optim/elementwise_optimizer.h"
#include "runtime/optim/optimizers.h"
#include "runtime/optim/update_math.h"

namespace autodist::optim::detail {
namespace {

// The update above as an UpdateRule (elementwise_optimizer.h).
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

  // buffers[0]: the momentum buffer (null without momentum).
  void operator()(float* p, const float* g, const BufferPointers& buffers, int64_t n) const {
    DispatchFlags(
        [&]<bool kDecay, bool kMomentum, bool kNesterov, bool kFirst>() {
          Run<kDecay, kMomentum, kNesterov, kFirst>(p, g, buffers[0], n);
        },
        has_weight_decay, has_momentum, nesterov, first);
  }

  template <bool kDecay, bool kMomentum, bool kNesterov, bool kFirst>
  void Run(float* __restrict p, const float* __restrict g, float* __restrict buf, int64_t n) const {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float d = g[i];
      if constexpr (kDecay) d = Fma(p[i], weight_decay, d);
      if constexpr (kMomentum) {
        buf[i] = kFirst ? d : Fma(d, one_minus_dampening, buf[i] * momentum);
        d = kNesterov ? Fma(buf[i], momentum, d) : buf[i];
      }
      p[i] = Fma(d, neg_lr, p[i]);
    }
  }
};

}  // namespace

std::unique_ptr<Optimizer> MakeSgd(const OptimizerOptions& options) {
  return std::make_unique<ElementwiseOptimizer<SgdRule>>(options);
}

}  // namespace autodist::optim::detail
