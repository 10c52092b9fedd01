// GlobalAveragePool on CUDA (opsets 1..17): [N, C, D1..Dn] -> [N, C, 1..1], the mean of each
// plane, as the CPU kernel computes it (runtime/ops/nn/average_pool.cc): the plane's sum times
// 1 / size in float. The gradient spreads dY[p] / size over plane p.
#include <algorithm>
#include <memory>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

struct PlaneShapeState final : ops::KernelState {
  Shape input_shape;
};

// Elements per plane of a [N, C, ...] shape.
int64_t PlaneSize(const Shape& shape) {
  const int64_t planes = shape[0] * shape[1];
  return planes == 0 ? 0 : tensor::NumElements(shape) / planes;
}

float Inverse(int64_t size) { return size > 0 ? 1.0F / static_cast<float>(size) : 0.0F; }

class CudaGlobalAveragePoolKernel final : public ops::OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    AD_CHECK(x.rank() >= 3 && x.dtype() == DType::kFloat32, kInvalidArgument,
             "{}: X must be float32 [N, C, D1, ...], got {} {}", node, tensor::DTypeName(x.dtype()),
             tensor::ShapeToString(x.shape()));
    Shape out_shape = x.shape();
    std::fill(out_shape.begin() + 2, out_shape.end(), 1);
    Tensor y(DType::kFloat32, out_shape, x.device());
    const int64_t size = PlaneSize(x.shape());
    detail::LaunchPlaneMeans(x.device_data<float>(), x.dim(0) * x.dim(1), size, Inverse(size),
                             y.device_data<float>(), stream);
    auto state = std::make_unique<PlaneShapeState>();
    state->input_shape = x.shape();
    ctx.save_state(std::move(state));
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const auto* state = &ops::SavedState<PlaneShapeState>(ctx);
    const Shape& shape = state->input_shape;
    Tensor dx(DType::kFloat32, shape, dy->device());
    const int64_t size = PlaneSize(shape);
    detail::LaunchPlaneBroadcast(dy->device_data<float>(), shape[0] * shape[1], size, Inverse(size),
                                 dx.device_data<float>(), stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
};

AUTODIST_REGISTER_DEVICE_KERNEL(GlobalAveragePool, 1, 17, CudaGlobalAveragePoolKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
