// ReduceSum and ReduceMean on CUDA, with the CPU kernels' semantics and axis checks
// (runtime/ops/math/reduce.cc, reduce_plan.h): ReduceMean's axes an attribute (opsets 1..17);
// ReduceSum's an attribute to opset 12 and from 13 an optional input, with noop_with_empty_axes
// (the axes input, small, read through a host copy). Each output is the float sum of its inputs
// (summed in double), divided by their count for Mean; the gradient is dY (/ count) broadcast
// back.
#include <memory>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/math/reduce_plan.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using tensor::DType;
using tensor::Tensor;

struct CudaReduceState final : ops::KernelState {
  ops::ReducePlan plan;
};

enum class Reduce { kSum, kMean };

template <Reduce kOp>
class CudaReduceKernel final : public ops::OpKernel {
 public:
  explicit CudaReduceKernel(const ops::NodeInfo& node)
      : OpKernel(node), attributes_(node, kOp == Reduce::kSum) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    detail::RequireFloat32(node, x, "the input");
    auto state = std::make_unique<CudaReduceState>();
    state->plan = attributes_.Plan(ctx, node);
    const ops::ReducePlan& plan = state->plan;
    if (plan.identity) {
      ctx.set_output(0, x);
    } else {
      Tensor y(DType::kFloat32, plan.out_shape, x.device());
      detail::LaunchSumToShape(x.device_data<float>(), y.device_data<float>(),
                               detail::PlanSumToShape(plan.input_shape, plan.kept_shape, node),
                               stream);
      if constexpr (kOp == Reduce::kMean) {
        detail::LaunchDivide(y.device_data<float>(), y.numel(), static_cast<float>(plan.count),
                             stream);
      }
      ctx.set_output(0, std::move(y));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const auto* state = &ops::SavedState<CudaReduceState>(ctx);
    const ops::ReducePlan& plan = state->plan;
    if (plan.identity) {
      ctx.set_input_grad(0, *dy);
      return;
    }
    Tensor dx(DType::kFloat32, plan.input_shape, dy->device());
    detail::LaunchBroadcastBinary<detail::SecondOfTwo>(
        dx.device_data<float>(), dy->device_data<float>(), dx.device_data<float>(),
        detail::PlanBroadcast(plan.input_shape, plan.kept_shape, plan.input_shape, node), stream);
    if constexpr (kOp == Reduce::kMean) {
      detail::LaunchDivide(dx.device_data<float>(), dx.numel(), static_cast<float>(plan.count),
                           stream);
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  ops::ReduceAttributes attributes_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(ReduceSum, 1, 17, CudaReduceKernel<Reduce::kSum>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(ReduceMean, 1, 17, CudaReduceKernel<Reduce::kMean>, kCuda);

}  // namespace
}  // namespace autodist::gpu
