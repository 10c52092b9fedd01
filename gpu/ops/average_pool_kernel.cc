// AveragePool on CUDA, 2-D (opsets 7..17): the CPU kernel's semantics (runtime/ops/nn/
// average_pool.cc): the window's mean with count_include_pad's divisor, ceil_mode, no dilation;
// the gradient spreads each output's share over its window's taps. Either direction may run on
// cuDNN instead where it computes the same windows, measured faster or pinned (pool_path.h); its
// sums add in its own order.
#include <cstdlib>
#include <memory>
#include <vector>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "gpu/ops/pool_choice.h"
#include "runtime/common/error.h"
#include "runtime/ops/nn/pool.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

struct CudaAveragePoolState final : ops::KernelState {
  Shape input_shape;
};

class CudaAveragePoolKernel final : public ops::OpKernel {
 public:
  explicit CudaAveragePoolKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        attributes_(ops::nn::ParseWindowAttributes(node, /*kernel_required=*/true)),
        count_include_pad_(node.GetInt("count_include_pad", 0) != 0),
        mode_(pool::ParsePoolPathMode(std::getenv(pool::kPoolPathEnv))) {
    AD_CHECK(attributes_.dilations == std::vector<int64_t>({1, 1}), kInvalidArgument,
             "{}: AveragePool has no dilations before opset 19", node.Describe());
  }

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    const ops::nn::WindowGeometry g = ops::nn::ResolvePoolInput(attributes_, x, node);
    Tensor y(DType::kFloat32, {x.dim(0), x.dim(1), g.out_h, g.out_w}, x.device());
    detail::CudnnPoolCall call = Call(x.dim(0), x.dim(1), g, node, x.device().index, stream);
    call.x = x.device_data<float>();
    call.y = y.device_data<float>();
    const auto ours = [&] {
      detail::LaunchAveragePool(x.device_data<float>(), x.dim(0) * x.dim(1), g, count_include_pad_,
                                y.device_data<float>(), stream);
    };
    detail::RunPoolPath(detail::ChoosePoolPath(mode_, pool::PoolDirection::kForward, call, ours),
                        pool::PoolDirection::kForward, call, ours);
    auto state = std::make_unique<CudaAveragePoolState>();
    state->input_shape = x.shape();
    ctx.save_state(std::move(state));
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const auto* state = &ops::SavedState<CudaAveragePoolState>(ctx);
    const Shape& shape = state->input_shape;
    const ops::nn::WindowGeometry g = ops::nn::ResolvePoolWindow(attributes_, shape, node);
    Tensor dx(DType::kFloat32, shape, dy->device());
    detail::CudnnPoolCall call = Call(shape[0], shape[1], g, node, dy->device().index, stream);
    call.dy = dy->device_data<float>();
    call.dx = dx.device_data<float>();
    const auto ours = [&] {
      detail::LaunchAveragePoolGrad(dy->device_data<float>(), shape[0] * shape[1], g,
                                    count_include_pad_, dx.device_data<float>(), stream);
    };
    detail::RunPoolPath(detail::ChoosePoolPath(mode_, pool::PoolDirection::kBackward, call, ours),
                        pool::PoolDirection::kBackward, call, ours);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  // The cuDNN call of this node over an input [batch, channels, ...], its tensors left for the
  // direction to fill in. `g` and `node` must outlive it.
  detail::CudnnPoolCall Call(int64_t batch, int64_t channels, const ops::nn::WindowGeometry& g,
                             const std::string& node, int device, cudaStream_t stream) const {
    return detail::CudnnPoolCall{.kind = count_include_pad_
                                             ? pool::PoolKind::kAverageIncludingPadding
                                             : pool::PoolKind::kAverageExcludingPadding,
                                 .batch = batch,
                                 .channels = channels,
                                 .window = &g,
                                 .device = device,
                                 .stream = stream,
                                 .node = &node};
  }

  ops::nn::WindowAttributes attributes_;
  bool count_include_pad_;
  pool::PoolPathMode mode_;  // read from AUTODIST_POOL_PATH when the kernel is made
};

AUTODIST_REGISTER_DEVICE_KERNEL(AveragePool, 7, 17, CudaAveragePoolKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
