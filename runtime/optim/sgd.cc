// SGD as torch.optim.SGD (PyTorch 1.13, _single_tensor_sgd), per element:
//   d = g + weight_decay * p                        (when weight_decay != 0)
//   buf = d on the first step, else momentum * buf + (1 - dampening) * d   (momentum != 0)
//   d = nesterov ? d + momentum * buf : buf
//   p = p - lr * d
#include <vector>

#include "runtime/ops/sparse_gradient.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/optimizers.h"
#include "runtime/optim/update_math.h"

namespace autodist::optim::detail {
namespace {

struct SgdStep {
  bool has_weight_decay;
  bool has_momentum;
  bool nesterov;
  bool first;  // the momentum buffer is created by this step
  float weight_decay;
  float momentum;
  float one_minus_dampening;
  float neg_lr;

  void operator()(float* p, const float* g, float* buf, int64_t n) const {
    DispatchFlags(
        [&]<bool kDecay, bool kMomentum, bool kNesterov, bool kFirst>() {
          Run<kDecay, kMomentum, kNesterov, kFirst>(p, g, buf, n);
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

class Sgd final : public StatefulOptimizer {
 public:
  explicit Sgd(const OptimizerOptions& options)
      : StatefulOptimizer(options, /*counts_steps=*/false,
                          options.momentum != 0 ? std::vector<BufferSlot>{{"momentum_buffer"}}
                                                : std::vector<BufferSlot>{}) {}

  void Apply(const std::string& name, tensor::Tensor& param, const tensor::Tensor& grad) override {
    CheckDense(name, param, grad);
    float* buf = nullptr;
    const SgdStep step = Begin(name, param, &buf);
    auto* p = param.data<float>();
    const auto* g = grad.data<float>();
    ForAllElements(param.numel(), [&](int64_t offset, int64_t n) {
      step(p + offset, g + offset, buf == nullptr ? nullptr : buf + offset, n);
    });
  }

  void ApplySparse(const std::string& name, tensor::Tensor& param,
                   const ops::SparseGradient& grad) override {
    // Without momentum and weight decay a zero row changes nothing (p - lr * 0 = p): row-wise is
    // exact. Otherwise absent rows still move (momentum) unless lazy_sparse.
    const bool row_wise_exact = options_.momentum == 0 && options_.weight_decay == 0;
    if (!row_wise_exact && !options_.lazy_sparse) {
      Optimizer::ApplySparse(name, param, grad);
      return;
    }
    CheckSparse(name, param, grad);
    float* buf = nullptr;
    const SgdStep step = Begin(name, param, &buf);
    auto* p = param.data<float>();
    const auto* g = grad.values.data<float>();
    ForPresentRows(grad.indices.ToInt64Vector("sparse gradient"), RowSize(param),
                   [&](int64_t param_offset, int64_t grad_offset, int64_t n) {
                     step(p + param_offset, g + grad_offset,
                          buf == nullptr ? nullptr : buf + param_offset, n);
                   });
  }

 private:
  // The step's coefficients; `*buf` is the momentum buffer (null without momentum).
  SgdStep Begin(const std::string& name, const tensor::Tensor& param, float** buf) {
    const OptimizerOptions& o = options_;
    SgdStep step{};
    step.has_weight_decay = o.weight_decay != 0;
    step.has_momentum = o.momentum != 0;
    step.nesterov = o.nesterov;
    step.weight_decay = static_cast<float>(o.weight_decay);
    step.momentum = static_cast<float>(o.momentum);
    step.one_minus_dampening = static_cast<float>(1.0 - o.dampening);
    step.neg_lr = static_cast<float>(-o.lr);
    if (step.has_momentum) {
      VariableState& state = StateFor(name, param, &step.first);
      *buf = state.buffer(0);
    }
    return step;
  }
};

}  // namespace

std::unique_ptr<Optimizer> MakeSgd(const OptimizerOptions& options) {
  return std::make_unique<Sgd>(options);
}

}  // namespace autodist::optim::detail
