// ReduceMean on CUDA (opsets 1..17, `axes` an attribute): the CPU kernel's semantics and axis
// checks (runtime/ops/math/reduce.cc, reduce_plan.h): each output is the float sum of its inputs
// (summed in double) divided by their count; the gradient is dY / count broadcast back.
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

class CudaReduceMeanKernel final : public ops::OpKernel {
 public:
  explicit CudaReduceMeanKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        keepdims_(node.GetInt("keepdims", 1) != 0),
        axes_(node.GetInts("axes", {})) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    detail::RequireFloat32(node, x, "the input");
    auto state = std::make_unique<CudaReduceState>();
    state->plan = ops::MakeReducePlan(x.shape(), axes_, keepdims_, false, node);
    const ops::ReducePlan& plan = state->plan;
    Tensor y(DType::kFloat32, plan.out_shape, x.device());
    detail::LaunchSumToShape(x.device_data<float>(), y.device_data<float>(),
                             detail::PlanSumToShape(plan.input_shape, plan.kept_shape, node),
                             stream);
    detail::LaunchDivide(y.device_data<float>(), y.numel(), static_cast<float>(plan.count), stream);
    ctx.set_output(0, std::move(y));
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const auto* state = dynamic_cast<const CudaReduceState*>(ctx.state());
    AD_CHECK(state != nullptr, kInternal, "{}: backward without the state of its forward", node);
    const ops::ReducePlan& plan = state->plan;
    Tensor dx(DType::kFloat32, plan.input_shape, dy->device());
    detail::LaunchBroadcastBinary<detail::SecondOfTwo>(
        dx.device_data<float>(), dy->device_data<float>(), dx.device_data<float>(),
        detail::PlanBroadcast(plan.input_shape, plan.kept_shape, plan.input_shape, node), stream);
    detail::LaunchDivide(dx.device_data<float>(), dx.numel(), static_cast<float>(plan.count),
                         stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  bool keepdims_;
  std::vector<int64_t> axes_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(ReduceMean, 1, 17, CudaReduceMeanKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
