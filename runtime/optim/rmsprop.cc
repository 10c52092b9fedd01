// RMSprop as torch.optim.RMSprop (PyTorch 1.13, _single_tensor_rmsprop), per element:
//   g = g + weight_decay * p                       (when weight_decay != 0)
//   square_avg = alpha * square_avg + (1 - alpha) * g * g
//   centered: grad_avg = alpha * grad_avg + (1 - alpha) * g;
//             avg = sqrt(square_avg - grad_avg * grad_avg) + eps
//   else:     avg = sqrt(square_avg) + eps
//   momentum > 0: buf = momentum * buf + g / avg;  p = p - lr * buf
//   else:         p = p - lr * g / avg
// The step count is kept (slot "step") as torch keeps it, although the update does not use it.
#include <cmath>
#include <vector>

#include "runtime/ops/sparse_gradient.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/optimizers.h"
#include "runtime/optim/update_math.h"

namespace autodist::optim::detail {
namespace {

struct RmspropStep {
  bool has_weight_decay;
  bool centered;
  bool has_momentum;
  float weight_decay;
  float alpha;
  float one_minus_alpha;
  float eps;
  float momentum;
  float neg_lr;

  void operator()(float* p, const float* g, float* square_avg, float* grad_avg, float* buf,
                  int64_t n) const {
    DispatchFlags(
        [&]<bool kDecay, bool kCentered, bool kMomentum>() {
          Run<kDecay, kCentered, kMomentum>(p, g, square_avg, grad_avg, buf, n);
        },
        has_weight_decay, centered, has_momentum);
  }

  template <bool kDecay, bool kCentered, bool kMomentum>
  void Run(float* __restrict p, const float* __restrict g, float* __restrict square_avg,
           float* __restrict grad_avg, float* __restrict buf, int64_t n) const {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float grad = g[i];
      if constexpr (kDecay) grad = Fma(p[i], weight_decay, grad);
      square_avg[i] = Fma(one_minus_alpha * grad, grad, square_avg[i] * alpha);
      float avg = 0;
      if constexpr (kCentered) {
        grad_avg[i] = Fma(grad, one_minus_alpha, grad_avg[i] * alpha);
        avg = std::sqrt(Fma(-grad_avg[i], grad_avg[i], square_avg[i]));
      } else {
        avg = std::sqrt(square_avg[i]);
      }
      avg += eps;
      if constexpr (kMomentum) {
        buf[i] = buf[i] * momentum + grad / avg;
        p[i] = Fma(buf[i], neg_lr, p[i]);
      } else {
        p[i] += neg_lr * grad / avg;
      }
    }
  }
};

class Rmsprop final : public StatefulOptimizer {
 public:
  explicit Rmsprop(const OptimizerOptions& options)
      : StatefulOptimizer(options, /*counts_steps=*/true, Slots(options)) {}

  void Apply(const std::string& name, tensor::Tensor& param, const tensor::Tensor& grad) override {
    CheckDense(name, param, grad);
    Buffers b;
    const RmspropStep step = Begin(name, param, &b);
    auto* p = param.data<float>();
    const auto* g = grad.data<float>();
    ForAllElements(param.numel(), [&](int64_t offset, int64_t n) {
      step(p + offset, g + offset, b.square_avg + offset, Offset(b.grad_avg, offset),
           Offset(b.buf, offset), n);
    });
  }

  void ApplySparse(const std::string& name, tensor::Tensor& param,
                   const ops::SparseGradient& grad) override {
    // square_avg decays on zero rows, so only lazy_sparse goes row by row.
    if (!options_.lazy_sparse) {
      Optimizer::ApplySparse(name, param, grad);
      return;
    }
    CheckSparse(name, param, grad);
    Buffers b;
    const RmspropStep step = Begin(name, param, &b);
    auto* p = param.data<float>();
    const auto* g = grad.values.data<float>();
    ForPresentRows(grad.indices.ToInt64Vector("sparse gradient"), RowSize(param),
                   [&](int64_t at, int64_t from, int64_t n) {
                     step(p + at, g + from, b.square_avg + at, Offset(b.grad_avg, at),
                          Offset(b.buf, at), n);
                   });
  }

 private:
  struct Buffers {
    float* square_avg = nullptr;
    float* grad_avg = nullptr;  // centered only
    float* buf = nullptr;       // momentum only
  };

  static float* Offset(float* base, int64_t offset) {
    return base == nullptr ? nullptr : base + offset;
  }

  static std::vector<BufferSlot> Slots(const OptimizerOptions& options) {
    std::vector<BufferSlot> slots{{"square_avg"}};
    if (options.momentum > 0) slots.push_back({"momentum_buffer"});
    if (options.centered) slots.push_back({"grad_avg"});
    return slots;
  }

  RmspropStep Begin(const std::string& name, const tensor::Tensor& param, Buffers* buffers) {
    const OptimizerOptions& o = options_;
    bool created = false;
    VariableState& state = StateFor(name, param, &created);
    ++state.step;
    size_t slot = 0;
    buffers->square_avg = state.buffer(slot++);
    if (o.momentum > 0) buffers->buf = state.buffer(slot++);
    if (o.centered) buffers->grad_avg = state.buffer(slot++);
    RmspropStep step{};
    step.has_weight_decay = o.weight_decay != 0;
    step.centered = o.centered;
    step.has_momentum = o.momentum > 0;
    step.weight_decay = static_cast<float>(o.weight_decay);
    step.alpha = static_cast<float>(o.alpha);
    step.one_minus_alpha = static_cast<float>(1.0 - o.alpha);
    step.eps = static_cast<float>(o.eps);
    step.momentum = static_cast<float>(o.momentum);
    step.neg_lr = static_cast<float>(-o.lr);
    return step;
  }
};

}  // namespace

std::unique_ptr<Optimizer> MakeRmsprop(const OptimizerOptions& options) {
  return std::make_unique<Rmsprop>(options);
}

}  // namespace autodist::optim::detail
