// Slice on CUDA (opsets 10..17), planned as the CPU plans it (runtime/ops/tensor/slice_plan.h):
// the output a strided copy of the input from the slice's first element (a strided gather; the
// whole input returned as it is), the gradient a zero tensor with the output gradient scattered
// back into the slice's positions. The starts, ends, axes and steps inputs, small, are read
// through a host copy. Elements of 4 or 8 bytes forward, float32 backward.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/slice_plan.h"

namespace autodist::gpu {
namespace {

using tensor::Tensor;

struct CudaSliceState final : ops::KernelState {
  ops::SlicePlan plan;
};

// The output positions of `plan` as a strided copy plan over the output's shape.
detail::StridedCopyPlan CopyPlan(const ops::SlicePlan& plan, const std::string& node) {
  const tensor::Shape& shape = plan.output_shape;
  AD_CHECK(shape.size() <= static_cast<size_t>(detail::kMaxRank), kInvalidArgument,
           "{}: inputs of rank {} are more than the {} axes a CUDA slice takes", node, shape.size(),
           detail::kMaxRank);
  detail::StridedCopyPlan copy;
  copy.rank = static_cast<int>(shape.size());
  copy.n = tensor::NumElements(shape);
  for (int axis = 0; axis < copy.rank; ++axis) {
    copy.dims[axis] = shape[static_cast<size_t>(axis)];
    copy.in_strides[axis] = plan.strides[static_cast<size_t>(axis)];
  }
  return copy;
}

class CudaSliceKernel final : public ops::OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    const size_t element = detail::RequireMovableElements(node, x, "the input");
    auto state = std::make_unique<CudaSliceState>();
    state->plan = ops::PlanSlice(
        x.shape(), ops::SliceList(ctx, 1, "starts"), ops::SliceList(ctx, 2, "ends"),
        ctx.has_input(3) ? ops::SliceList(ctx, 3, "axes") : std::vector<int64_t>{},
        ctx.has_input(4) ? ops::SliceList(ctx, 4, "steps") : std::vector<int64_t>{}, node);
    const ops::SlicePlan& plan = state->plan;
    if (plan.whole) {
      ctx.set_output(0, x);
    } else {
      Tensor y(x.dtype(), plan.output_shape, x.device());
      detail::LaunchStridedCopy(static_cast<const std::byte*>(x.raw()) + plan.offset * element,
                                y.raw(), element, CopyPlan(plan, node), stream);
      ctx.set_output(0, std::move(y));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    detail::RequireFloat32(node, *dy, "the output gradient");
    const auto* state = &ops::SavedState<CudaSliceState>(ctx);
    const ops::SlicePlan& plan = state->plan;
    Tensor dx(tensor::DType::kFloat32, plan.input_shape, dy->device());
    CheckCuda(cudaMemsetAsync(dx.raw(), 0, dx.nbytes(), stream), node + ": zeroing the gradient");
    detail::LaunchStridedScatter(dy->raw(), dx.device_data<float>() + plan.offset, sizeof(float),
                                 CopyPlan(plan, node), stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
};

AUTODIST_REGISTER_DEVICE_KERNEL(Slice, 10, 17, CudaSliceKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
