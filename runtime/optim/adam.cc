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

#include "runtime/ops/sparse_gradient.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/optimizers.h"
#include "runtime/optim/update_math.h"

namespace autodist::optim::detail {
namespace {

struct AdamStep {
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

  void operator()(float* p, const float* g, float* m, float* v, float* v_max, int64_t n) const {
    DispatchFlags(
        [&]<bool kL2, bool kDecoupled, bool kAmsgrad>() {
          Run<kL2, kDecoupled, kAmsgrad>(p, g, m, v, v_max, n);
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

class Adam final : public StatefulOptimizer {
 public:
  explicit Adam(const OptimizerOptions& options)
      : StatefulOptimizer(options, /*counts_steps=*/true, Slots(options.amsgrad)) {}

  void Apply(const std::string& name, tensor::Tensor& param, const tensor::Tensor& grad) override {
    CheckDense(name, param, grad);
    Buffers b;
    const AdamStep step = Begin(name, param, &b);
    auto* p = param.data<float>();
    const auto* g = grad.data<float>();
    ForAllElements(param.numel(), [&](int64_t offset, int64_t n) {
      step(p + offset, g + offset, b.m + offset, b.v + offset,
           b.v_max == nullptr ? nullptr : b.v_max + offset, n);
    });
  }

  void ApplySparse(const std::string& name, tensor::Tensor& param,
                   const ops::SparseGradient& grad) override {
    // Moments decay on zero rows too, so only lazy_sparse goes row by row.
    if (!options_.lazy_sparse) {
      Optimizer::ApplySparse(name, param, grad);
      return;
    }
    CheckSparse(name, param, grad);
    Buffers b;
    const AdamStep step = Begin(name, param, &b);
    auto* p = param.data<float>();
    const auto* g = grad.values.data<float>();
    ForPresentRows(grad.indices.ToInt64Vector("sparse gradient"), RowSize(param),
                   [&](int64_t at, int64_t from, int64_t n) {
                     step(p + at, g + from, b.m + at, b.v + at,
                          b.v_max == nullptr ? nullptr : b.v_max + at, n);
                   });
  }

 private:
  struct Buffers {
    float* m = nullptr;
    float* v = nullptr;
    float* v_max = nullptr;
  };

  static std::vector<BufferSlot> Slots(bool amsgrad) {
    std::vector<BufferSlot> slots{{"exp_avg"}, {"exp_avg_sq"}};
    if (amsgrad) slots.push_back({"max_exp_avg_sq"});
    return slots;
  }

  // Advances the variable's step count and returns the step's coefficients.
  AdamStep Begin(const std::string& name, const tensor::Tensor& param, Buffers* buffers) {
    bool created = false;
    VariableState& state = StateFor(name, param, &created);
    buffers->m = state.buffer(0);
    buffers->v = state.buffer(1);
    if (options_.amsgrad) buffers->v_max = state.buffer(2);
    const auto t = static_cast<double>(++state.step);

    const OptimizerOptions& o = options_;
    const bool decoupled = o.name == "adamw";
    const double bias_correction1 = 1.0 - std::pow(o.beta1, t);
    const double bias_correction2 = 1.0 - std::pow(o.beta2, t);
    AdamStep step{};
    step.l2 = !decoupled && o.weight_decay != 0;
    step.decoupled = decoupled;
    step.amsgrad = o.amsgrad;
    step.weight_decay = static_cast<float>(o.weight_decay);
    step.decay_factor = static_cast<float>(1.0 - o.lr * o.weight_decay);
    step.beta1 = static_cast<float>(o.beta1);
    step.one_minus_beta1 = static_cast<float>(1.0 - o.beta1);
    step.beta2 = static_cast<float>(o.beta2);
    step.one_minus_beta2 = static_cast<float>(1.0 - o.beta2);
    step.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
    step.eps = static_cast<float>(o.eps);
    step.neg_step_size = static_cast<float>(-(o.lr / bias_correction1));
    return step;
  }
};

}  // namespace

std::unique_ptr<Optimizer> MakeAdam(const OptimizerOptions& options) {
  return std::make_unique<Adam>(options);
}

}  // namespace autodist::optim::detail
