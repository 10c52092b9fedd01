// Adagrad as torch.optim.Adagrad (PyTorch 1.13, _single_tensor_adagrad), per element at step t
// (counted per variable, from 1):
//   g = g + weight_decay * p                       (when weight_decay != 0)
//   sum = sum + g * g                              (sum starts at initial_accumulator_value)
//   p = p - (lr / (1 + (t - 1) * lr_decay)) * g / (sqrt(sum) + eps)
#include <cmath>
#include <vector>

#include "runtime/ops/sparse_gradient.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/optimizers.h"
#include "runtime/optim/update_math.h"

namespace autodist::optim::detail {
namespace {

struct AdagradStep {
  bool has_weight_decay;
  float weight_decay;
  float eps;
  float neg_clr;  // -lr / (1 + (t - 1) * lr_decay)

  void operator()(float* p, const float* g, float* sum, int64_t n) const {
    DispatchFlags([&]<bool kDecay>() { Run<kDecay>(p, g, sum, n); }, has_weight_decay);
  }

  template <bool kDecay>
  void Run(float* __restrict p, const float* __restrict g, float* __restrict sum, int64_t n) const {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float grad = g[i];
      if constexpr (kDecay) grad = Fma(p[i], weight_decay, grad);
      sum[i] = Fma(grad, grad, sum[i]);
      const float denom = std::sqrt(sum[i]) + eps;
      p[i] += neg_clr * grad / denom;
    }
  }
};

class Adagrad final : public StatefulOptimizer {
 public:
  explicit Adagrad(const OptimizerOptions& options)
      : StatefulOptimizer(options, /*counts_steps=*/true,
                          {{"sum", static_cast<float>(options.initial_accumulator_value)}}) {}

  void Apply(const std::string& name, tensor::Tensor& param, const tensor::Tensor& grad) override {
    CheckDense(name, param, grad);
    float* sum = nullptr;
    const AdagradStep step = Begin(name, param, &sum);
    auto* p = param.data<float>();
    const auto* g = grad.data<float>();
    ForAllElements(param.numel(), [&](int64_t offset, int64_t n) {
      step(p + offset, g + offset, sum + offset, n);
    });
  }

  void ApplySparse(const std::string& name, tensor::Tensor& param,
                   const ops::SparseGradient& grad) override {
    // A zero row adds nothing to `sum` and moves nothing (p - clr * 0 / std = p) as long as
    // std > 0, which eps > 0 or a positive initial sum guarantees; with neither, the dense update
    // makes never-seen rows 0/0 = NaN, and we keep that (PyTorch's) result. Weight decay moves
    // zero rows, so it needs the dense path unless lazy_sparse.
    const bool row_wise_exact =
        options_.weight_decay == 0 && (options_.eps > 0 || options_.initial_accumulator_value > 0);
    if (!row_wise_exact && !options_.lazy_sparse) {
      Optimizer::ApplySparse(name, param, grad);
      return;
    }
    CheckSparse(name, param, grad);
    float* sum = nullptr;
    const AdagradStep step = Begin(name, param, &sum);
    auto* p = param.data<float>();
    const auto* g = grad.values.data<float>();
    ForPresentRows(
        grad.indices.ToInt64Vector("sparse gradient"), RowSize(param),
        [&](int64_t at, int64_t from, int64_t n) { step(p + at, g + from, sum + at, n); });
  }

 private:
  // Advances the variable's step count and returns the step's coefficients.
  AdagradStep Begin(const std::string& name, const tensor::Tensor& param, float** sum) {
    bool created = false;
    VariableState& state = StateFor(name, param, &created);
    *sum = state.buffer(0);
    const auto t = static_cast<double>(++state.step);
    const OptimizerOptions& o = options_;
    AdagradStep step{};
    step.has_weight_decay = o.weight_decay != 0;
    step.weight_decay = static_cast<float>(o.weight_decay);
    step.eps = static_cast<float>(o.eps);
    step.neg_clr = static_cast<float>(-(o.lr / (1.0 + (t - 1.0) * o.lr_decay)));
    return step;
  }
};

}  // namespace

std::unique_ptr<Optimizer> MakeAdagrad(const OptimizerOptions& options) {
  return std::make_unique<Adagrad>(options);
}

}  // namespace autodist::optim::detail
