// MaxPool on CUDA, 2-D (opsets 1..17): the CPU kernel's semantics (runtime/ops/nn/max_pool.cc):
// the same windows, ties, NaNs and Indices output, computed per output position by the same
// function; backward routes each output's gradient to its argmax. Forward without the Indices
// output in a session that does not train may run on cuDNN instead, where measured faster or
// pinned (pool_path.h: the maximum is the same value either way); backward is always ours.
#include <cstdlib>
#include <limits>
#include <memory>

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

struct CudaMaxPoolState final : ops::KernelState {
  Shape input_shape;
  ops::nn::WindowGeometry window;
  Tensor argmax;  // int32 [N, C, outH, outW] on the device: index in the input plane, or -1
  Tensor x;       // where forward ran on cuDNN (no argmax): the input, to find the argmax again
};

class CudaMaxPoolKernel final : public ops::OpKernel {
 public:
  explicit CudaMaxPoolKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        attributes_(ops::nn::ParseWindowAttributes(node, /*kernel_required=*/true)),
        column_major_(node.GetInt("storage_order", 0) != 0),
        mode_(pool::ParsePoolPathMode(std::getenv(pool::kPoolPathEnv))) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    const ops::nn::WindowGeometry g = ops::nn::ResolvePoolInput(attributes_, x, node);
    AD_CHECK(g.in_size() <= std::numeric_limits<int32_t>::max(), kInvalidArgument,
             "{}: input planes of {} elements are too large", node, g.in_size());
    const Shape out_shape{x.dim(0), x.dim(1), g.out_h, g.out_w};
    const int64_t planes = x.dim(0) * x.dim(1);
    Tensor y(DType::kFloat32, out_shape, x.device());
    auto state = std::make_unique<CudaMaxPoolState>();
    state->input_shape = x.shape();
    state->window = g;
    const auto ours = [&] {
      if (!state->argmax.defined()) state->argmax = Tensor(DType::kInt32, out_shape, x.device());
      detail::LaunchMaxPool(x.device_data<float>(), planes, g, y.device_data<float>(),
                            state->argmax.device_data<int32_t>(), stream);
    };
    const detail::CudnnPoolCall call{.kind = pool::PoolKind::kMax,
                                     .batch = x.dim(0),
                                     .channels = x.dim(1),
                                     .window = &g,
                                     .device = x.device().index,
                                     .stream = stream,
                                     .node = &node,
                                     .needs_argmax = ctx.num_outputs() > 1 || ctx.training(),
                                     .x = x.device_data<float>(),
                                     .y = y.device_data<float>()};
    const pool::PoolChoice choice =
        detail::ChoosePoolPath(mode_, pool::PoolDirection::kForward, call, ours);
    detail::RunPoolPath(choice, pool::PoolDirection::kForward, call, ours);
    if (choice.path == pool::PoolPath::kCudnn) {
      // No argmax (the measurement's is dropped too): a backward after this forward, which no
      // session runs without training, finds it again from X.
      state->argmax = Tensor();
      state->x = x;
    }
    ctx.set_output(0, std::move(y));
    if (ctx.num_outputs() > 1) {
      Tensor indices(DType::kInt64, out_shape, x.device());
      detail::LaunchMaxPoolIndices(state->argmax.device_data<int32_t>(), planes, g, column_major_,
                                   indices.device_data<int64_t>(), stream);
      ctx.set_output(1, std::move(indices));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const auto* state = &ops::SavedState<CudaMaxPoolState>(ctx);
    const int64_t planes = state->input_shape[0] * state->input_shape[1];
    Tensor argmax = state->argmax;
    if (!argmax.defined()) {  // forward ran on cuDNN: our forward again, for its argmax
      const ops::nn::WindowGeometry& g = state->window;
      const Shape out_shape{state->input_shape[0], state->input_shape[1], g.out_h, g.out_w};
      Tensor y(DType::kFloat32, out_shape, dy->device());
      argmax = Tensor(DType::kInt32, out_shape, dy->device());
      detail::LaunchMaxPool(state->x.device_data<float>(), planes, g, y.device_data<float>(),
                            argmax.device_data<int32_t>(), stream);
    }
    Tensor dx(DType::kFloat32, state->input_shape, dy->device());
    detail::LaunchMaxPoolGrad(dy->device_data<float>(), argmax.device_data<int32_t>(), planes,
                              state->window, dx.device_data<float>(), stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  ops::nn::WindowAttributes attributes_;
  bool column_major_;
  pool::PoolPathMode mode_;  // read from AUTODIST_POOL_PATH when the kernel is made
};

AUTODIST_REGISTER_DEVICE_KERNEL(MaxPool, 1, 17, CudaMaxPoolKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
