// SoftmaxCrossEntropyLoss (opsets 12..17): scores [N, C, d1..dk], labels [N, d1..dk] (int64),
// optional weights [C]; reduction none | sum | mean; ignore_index; optional second output
// log_prob. Matches PyTorch's cross_entropy: with weights, "mean" divides by the sum of the
// weights of the non-ignored targets.
#include <cmath>
#include <limits>
#include <optional>

#include "runtime/common/error.h"
#include "runtime/ops/loss/reduction.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

struct SoftmaxState final : KernelState {
  Tensor log_prob;  // [N, C, D] as computed in forward
  float denominator = 1.0F;
};

class SoftmaxCrossEntropyKernel final : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyKernel(const NodeInfo& node)
      : OpKernel(node), reduction_(ParseReduction(node)), ignore_index_(ParseIgnoreIndex(node)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& scores = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    AD_CHECK(scores.rank() >= 2, kInvalidArgument, "{}: scores must be [N, C, ...], got {}",
             ctx.Describe(), tensor::ShapeToString(scores.shape()));
    const int64_t n = scores.dim(0);
    const int64_t c = scores.dim(1);
    const int64_t d = n * c == 0 ? 0 : scores.numel() / (n * c);
    Shape label_shape = scores.shape();
    label_shape.erase(label_shape.begin() + 1);
    AD_CHECK(labels.shape() == label_shape, kInvalidArgument,
             "{}: labels have shape {} but scores {} need {}", ctx.Describe(),
             tensor::ShapeToString(labels.shape()), tensor::ShapeToString(scores.shape()),
             tensor::ShapeToString(label_shape));
    const std::vector<int64_t> label = labels.ToInt64Vector(ctx.Describe() + ": labels");
    const float* weights = nullptr;
    if (ctx.has_input(2)) {
      AD_CHECK(ctx.input(2).shape() == Shape{c}, kInvalidArgument,
               "{}: weights must have shape [{}]", ctx.Describe(), c);
      weights = ctx.input(2).data<float>();
    }

    auto state = std::make_unique<SoftmaxState>();
    state->log_prob = Tensor(DType::kFloat32, scores.shape());
    const float* x = scores.data<float>();
    float* lp = state->log_prob.data<float>();
    ParallelFor(n * d, 256, [&](int64_t begin, int64_t end) {
      for (int64_t nd = begin; nd < end; ++nd) {
        const int64_t base = (nd / d) * c * d + nd % d;
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t k = 0; k < c; ++k) max = std::max(max, x[base + k * d]);
        float sum = 0.0F;
        for (int64_t k = 0; k < c; ++k) sum += std::exp(x[base + k * d] - max);
        const float log_sum = max + std::log(sum);
        for (int64_t k = 0; k < c; ++k) lp[base + k * d] = x[base + k * d] - log_sum;
      }
    });

    ReducedLoss loss = WeightedNll(lp, n, c, d, label_shape, label, weights, reduction_,
                                   ignore_index_, ctx.Describe(), "label");
    state->denominator = loss.denominator;
    ctx.set_output(0, std::move(loss.value));
    if (ctx.num_outputs() > 1) ctx.set_output(1, state->log_prob);
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    if (!ctx.needs_grad(0)) return;
    const auto* state = &SavedState<SoftmaxState>(ctx);
    const Tensor& scores = ctx.input(0);
    const int64_t n = scores.dim(0);
    const int64_t c = scores.dim(1);
    const int64_t d = n * c == 0 ? 0 : scores.numel() / (n * c);
    const std::vector<int64_t> label = ctx.input(1).ToInt64Vector(ctx.Describe() + ": labels");
    const float* weights = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
    const float* lp = state->log_prob.data<float>();
    Tensor dx = Tensor::Zeros(DType::kFloat32, scores.shape());
    float* g = dx.data<float>();

    if (const Tensor* dloss = ctx.output_grad(0)) {
      const float* dl = dloss->data<float>();
      for (int64_t nd = 0; nd < n * d; ++nd) {
        const int64_t target = label[static_cast<size_t>(nd)];
        if (ignore_index_ && target == *ignore_index_) continue;
        const float w = weights != nullptr ? weights[target] : 1.0F;
        const float scale = reduction_ == Reduction::kNone ? dl[nd] : dl[0] / state->denominator;
        const int64_t base = (nd / d) * c * d + nd % d;
        // d(-w log p_t)/dx_k = w (p_k - [k == t])
        for (int64_t k = 0; k < c; ++k) g[base + k * d] += scale * w * std::exp(lp[base + k * d]);
        g[base + target * d] -= scale * w;
      }
    }
    if (const Tensor* dlog_prob = ctx.output_grad(1)) {
      // d log_softmax: g_k += dlp_k - p_k * sum_j dlp_j over the class axis.
      const float* dlp = dlog_prob->data<float>();
      for (int64_t nd = 0; nd < n * d; ++nd) {
        const int64_t base = (nd / d) * c * d + nd % d;
        float sum = 0.0F;
        for (int64_t k = 0; k < c; ++k) sum += dlp[base + k * d];
        for (int64_t k = 0; k < c; ++k) {
          g[base + k * d] += dlp[base + k * d] - std::exp(lp[base + k * d]) * sum;
        }
      }
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  Reduction reduction_;
  std::optional<int64_t> ignore_index_;  // absent: no label is ignored
};

AUTODIST_REGISTER_KERNEL(SoftmaxCrossEntropyLoss, 12, 17, SoftmaxCrossEntropyKernel);

}  // namespace
}  // namespace autodist::ops
