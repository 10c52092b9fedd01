// ReduceSum and ReduceMean on float32, with keepdims.
//   ReduceSum  opsets 1..12: `axes` attribute; 13..17: `axes` as optional int64 input 1, and
//              noop_with_empty_axes (empty axes: identity instead of reducing everything).
//   ReduceMean opsets 1..17: `axes` attribute (the axes input arrives in opset 18).
// Sums accumulate in double per output element, then round once (math/reduce_sum.h); Mean
// divides the float sum by the element count (as PyTorch does), so its gradient is dy / count
// broadcast back.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/math/elementwise.h"
#include "runtime/ops/math/reduce_plan.h"
#include "runtime/ops/math/reduce_sum.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

struct ReduceState final : KernelState {
  ReducePlan plan;
};

enum class ReduceOp { kSum, kMean };

template <ReduceOp kOp>
class ReduceKernel final : public OpKernel {
 public:
  explicit ReduceKernel(const NodeInfo& node)
      : OpKernel(node), attributes_(node, kOp == ReduceOp::kSum) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.dtype() == DType::kFloat32, kInvalidArgument, "{}: input must be float32, got {}",
             ctx.Describe(), tensor::DTypeName(x.dtype()));
    ReducePlan plan = attributes_.Plan(ctx, ctx.Describe());
    if (plan.identity) {
      ctx.set_output(0, x);
    } else {
      Tensor y(DType::kFloat32, plan.out_shape);
      SumToKeptShape(x.data<float>(), plan.input_shape, plan.kept_shape, y.data<float>(),
                     kOp == ReduceOp::kMean ? static_cast<float>(plan.count) : 1.0F);
      ctx.set_output(0, std::move(y));
    }
    auto state = std::make_unique<ReduceState>();
    state->plan = std::move(plan);
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const auto* state = &SavedState<ReduceState>(ctx);
    const ReducePlan& plan = state->plan;
    if (plan.identity) {
      ctx.set_input_grad(0, *dy);
      return;
    }
    // Every input element receives the gradient of the output it was reduced into.
    Tensor dx(DType::kFloat32, plan.input_shape);
    const float divisor = kOp == ReduceOp::kMean ? static_cast<float>(plan.count) : 1.0F;
    if constexpr (kOp == ReduceOp::kMean) {
      BroadcastBinary(dy->data<float>(), plan.kept_shape, &divisor, Shape{}, dx.data<float>(),
                      plan.input_shape, [](float g, float c) { return g / c; });
    } else {
      BroadcastBinary(dy->data<float>(), plan.kept_shape, &divisor, Shape{}, dx.data<float>(),
                      plan.input_shape, [](float g, float /*one*/) { return g; });
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  ReduceAttributes attributes_;
};

using ReduceSumKernel = ReduceKernel<ReduceOp::kSum>;
using ReduceMeanKernel = ReduceKernel<ReduceOp::kMean>;

AUTODIST_REGISTER_KERNEL(ReduceSum, 1, 17, ReduceSumKernel);
AUTODIST_REGISTER_KERNEL(ReduceMean, 1, 17, ReduceMeanKernel);

}  // namespace
}  // namespace autodist::ops
