// One-input element-wise ops on CUDA, forward and backward, float32: Neg, Exp, Log, Sqrt, Erf,
// Sigmoid, Tanh, Relu, with the CPU kernels' math (runtime/ops/math/unary_math.h).
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/ops/math/unary_math.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using ops::GradReads;
using tensor::Tensor;

template <typename Op>
class CudaUnaryKernel final : public ops::OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ops::ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(description(), x);
    detail::RequireFloat32(description(), x, "the input");
    Tensor y(tensor::DType::kFloat32, x.shape(), x.device());
    detail::LaunchUnaryForward<Op>(x.device_data<float>(), y.device_data<float>(), x.numel(),
                                   stream);
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    cudaStream_t stream = detail::StreamOf(description(), *dy);
    Tensor dx(tensor::DType::kFloat32, dy->shape(), dy->device());
    const float* v = nullptr;
    if constexpr (Op::kReads == GradReads::kInput) v = ctx.input(0).device_data<float>();
    if constexpr (Op::kReads == GradReads::kOutput) v = ctx.output(0).device_data<float>();
    detail::LaunchUnaryGrad<Op>(dy->device_data<float>(), v, dx.device_data<float>(), dx.numel(),
                                stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override {
    return Op::kReads == GradReads::kInput;
  }
  bool BackwardNeedsOutput(size_t /*output*/) const override {
    return Op::kReads == GradReads::kOutput;
  }
};

AUTODIST_REGISTER_DEVICE_KERNEL(Neg, 6, 17, CudaUnaryKernel<ops::NegOp>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Exp, 6, 17, CudaUnaryKernel<ops::ExpOp>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Log, 6, 17, CudaUnaryKernel<ops::LogOp>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Sqrt, 6, 17, CudaUnaryKernel<ops::SqrtOp>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Erf, 9, 17, CudaUnaryKernel<ops::ErfOp>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Sigmoid, 6, 17, CudaUnaryKernel<ops::SigmoidOp>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Tanh, 6, 17, CudaUnaryKernel<ops::TanhOp>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Relu, 6, 17, CudaUnaryKernel<ops::ReluOp>, kCuda);

}  // namespace
}  // namespace autodist::gpu
