// NegativeLogLikelihoodLoss (opsets 12..17): input [N, C, d1..dk] (log-probabilities), target
// [N, d1..dk] (int64 or int32), optional weight [C]; loss_i = -weight[t_i] * input[n, t_i, d],
// reduced by none | sum | mean. Matches PyTorch's nll_loss: "mean" divides by the sum of the
// weights of the non-ignored targets (NaN when every target is ignored, as in PyTorch). Unlike
// PyTorch (default -100), nothing is ignored unless ignore_index is given, as ONNX specifies.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/loss/reduction.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

// Backward needs only the input's shape and the mean's denominator, not the input itself.
struct NllState final : KernelState {
  Shape input_shape;
  float denominator = 1.0F;
};

class NllLossKernel final : public OpKernel {
 public:
  explicit NllLossKernel(const NodeInfo& node)
      : OpKernel(node), reduction_(ParseReduction(node)), ignore_index_(ParseIgnoreIndex(node)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& target = ctx.input(1);
    AD_CHECK(input.dtype() == DType::kFloat32, kInvalidArgument,
             "{}: input must be float32, got {}", ctx.Describe(), tensor::DTypeName(input.dtype()));
    AD_CHECK(input.rank() >= 2, kInvalidArgument, "{}: input must be [N, C, ...], got {}",
             ctx.Describe(), tensor::ShapeToString(input.shape()));
    const int64_t n = input.dim(0);
    const int64_t c = input.dim(1);
    Shape target_shape = input.shape();
    target_shape.erase(target_shape.begin() + 1);
    AD_CHECK(target.shape() == target_shape, kInvalidArgument,
             "{}: target has shape {} but input {} needs {}", ctx.Describe(),
             tensor::ShapeToString(target.shape()), tensor::ShapeToString(input.shape()),
             tensor::ShapeToString(target_shape));
    const std::vector<int64_t> labels = target.ToInt64Vector(ctx.Describe() + ": target");
    const float* weights = Weights(ctx.has_input(2) ? &ctx.input(2) : nullptr, c, ctx.Describe());

    const int64_t d = tensor::NumElements(target_shape) / std::max<int64_t>(n, 1);
    ReducedLoss loss = WeightedNll(input.data<float>(), n, c, d, target_shape, labels, weights,
                                   reduction_, ignore_index_, ctx.Describe(), "target");
    auto state = std::make_unique<NllState>();
    state->input_shape = input.shape();
    state->denominator = loss.denominator;
    ctx.set_output(0, std::move(loss.value));
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dloss = ctx.output_grad(0);
    if (dloss == nullptr || !ctx.needs_grad(0)) return;
    const auto* state = &SavedState<NllState>(ctx);
    const int64_t n = state->input_shape[0];
    const int64_t c = state->input_shape[1];
    Tensor dx = Tensor::Zeros(DType::kFloat32, state->input_shape);
    const int64_t d = n * c == 0 ? 0 : dx.numel() / (n * c);
    const std::vector<int64_t> labels = ctx.input(1).ToInt64Vector(ctx.Describe() + ": target");
    const float* weights = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
    const float* dl = dloss->data<float>();
    float* g = dx.data<float>();
    for (int64_t i = 0; i < n * d; ++i) {
      const int64_t t = labels[static_cast<size_t>(i)];
      if (ignore_index_ && t == *ignore_index_) continue;
      const float w = weights != nullptr ? weights[t] : 1.0F;
      const float scale = reduction_ == Reduction::kNone ? dl[i] : dl[0] / state->denominator;
      g[(i / d) * c * d + t * d + i % d] = -w * scale;
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  // The input's values are never read by Backward (its shape is in the state).
  bool BackwardNeedsInput(size_t input) const override { return input != 0; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  static const float* Weights(const Tensor* weight, int64_t c, const std::string& describe) {
    if (weight == nullptr) return nullptr;
    AD_CHECK(weight->dtype() == DType::kFloat32 && weight->shape() == Shape{c}, kInvalidArgument,
             "{}: weight must be float32 [{}], got {} {}", describe, c,
             tensor::DTypeName(weight->dtype()), tensor::ShapeToString(weight->shape()));
    return weight->data<float>();
  }

  Reduction reduction_;
  std::optional<int64_t> ignore_index_;  // absent: no label is ignored
};

AUTODIST_REGISTER_KERNEL(NegativeLogLikelihoodLoss, 12, 17, NllLossKernel);

}  // namespace
}  // namespace autodist::ops
