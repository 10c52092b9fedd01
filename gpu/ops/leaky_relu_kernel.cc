// LeakyRelu on CUDA (opsets 6..17), float32: y = x for x > 0, alpha * x otherwise, and the
// gradient likewise, with the CPU kernel's choices (runtime/ops/activation/leaky_relu.cc): the
// alpha side at 0, and the gradient read off the output where alpha >= 0 (the input otherwise).
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using tensor::Tensor;

class CudaLeakyReluKernel final : public ops::OpKernel {
 public:
  explicit CudaLeakyReluKernel(const ops::NodeInfo& node)
      : OpKernel(node), alpha_(node.GetFloat("alpha", 0.01F)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(description(), x);
    detail::RequireFloat32(description(), x, "the input");
    Tensor y(tensor::DType::kFloat32, x.shape(), x.device());
    detail::LaunchLeakyRelu(x.device_data<float>(), y.device_data<float>(), x.numel(), alpha_,
                            stream);
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    cudaStream_t stream = detail::StreamOf(description(), *dy);
    const Tensor& sign_source = ReadsOutput() ? ctx.output(0) : ctx.input(0);
    Tensor dx(tensor::DType::kFloat32, dy->shape(), dy->device());
    detail::LaunchLeakyReluGrad(dy->device_data<float>(), sign_source.device_data<float>(),
                                dx.device_data<float>(), dx.numel(), alpha_, stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return !ReadsOutput(); }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return ReadsOutput(); }

 private:
  bool ReadsOutput() const { return alpha_ >= 0.0F; }

  float alpha_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(LeakyRelu, 6, 17, CudaLeakyReluKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
