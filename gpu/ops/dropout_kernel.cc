// Dropout on CUDA (opsets 10..17): the CPU kernel's decision (runtime/ops/nn/dropout_draw.h: the
// ratio, the mode, one seed drawn from the session's engine per call that drops) and its
// counter-based mask (dropout.cu), so a GPU session drops the elements a CPU session with the
// same engine state drops. Not dropping: the input itself and an all-true mask.
#include <memory>

#include "gpu/device/cuda_error.h"
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/nn/dropout_draw.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using tensor::DType;
using tensor::Tensor;

struct CudaDropoutState final : ops::KernelState {
  Tensor mask;  // bool on the device; undefined when nothing was dropped
  float scale = 1.0F;
};

class CudaDropoutKernel final : public ops::OpKernel {
 public:
  explicit CudaDropoutKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        ratio_from_attribute_(node.opset() < 12),
        attribute_ratio_(node.GetFloat("ratio", 0.5F)) {
    if (ratio_from_attribute_) ops::CheckDropoutRatio(attribute_ratio_, node.Describe());
  }

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    detail::RequireFloat32(node, x, "the data");
    const ops::DropoutDraw draw = ops::DrawDropout(ctx, ratio_from_attribute_, attribute_ratio_);
    auto state = std::make_unique<CudaDropoutState>();
    if (!draw.drops) {
      ctx.set_output(0, x);
      if (ctx.num_outputs() > 1) {
        Tensor mask(DType::kBool, x.shape(), x.device());
        // A bool is one byte, true its value 1.
        CheckCuda(cudaMemsetAsync(mask.raw(), 1, mask.nbytes(), stream), node + ": the mask");
        ctx.set_output(1, std::move(mask));
      }
      ctx.save_state(std::move(state));
      return;
    }
    state->scale = draw.scale;
    state->mask = Tensor(DType::kBool, x.shape(), x.device());
    Tensor y(DType::kFloat32, x.shape(), x.device());
    detail::LaunchDropout(x.device_data<float>(), y.device_data<float>(),
                          state->mask.device_data<bool>(), x.numel(), draw.seed, draw.threshold,
                          draw.scale, stream);
    ctx.set_output(0, std::move(y));
    if (ctx.num_outputs() > 1) ctx.set_output(1, state->mask);
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    const auto* state = &ops::SavedState<CudaDropoutState>(ctx);
    if (!state->mask.defined()) {
      ctx.set_input_grad(0, *dy);  // identity: the gradient passes unchanged
      return;
    }
    cudaStream_t stream = detail::StreamOf(node, *dy);
    Tensor dx(DType::kFloat32, dy->shape(), dy->device());
    detail::LaunchDropoutGrad(dy->device_data<float>(), state->mask.device_data<bool>(),
                              dx.device_data<float>(), dx.numel(), state->scale, stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  bool ratio_from_attribute_;
  float attribute_ratio_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(Dropout, 10, 17, CudaDropoutKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
