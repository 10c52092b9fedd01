// Pow on CUDA (opsets 7..17): the CPU kernel's semantics (runtime/ops/math/pow.cc): a float32
// base, a float32 or integer exponent (used as float, no gradient when integer), ONNX
// multidirectional broadcasting, PyTorch's gradients, each summed back to its operand's shape.
// The passes are pow.cu's.
#include <string>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/math/pow_exponent.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::gpu {
namespace {

using detail::PowTerm;
using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

class CudaPowKernel final : public ops::OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& base = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, base);
    detail::RequireFloat32(node, base, "the base");
    const Tensor exponent = ops::PowExponentAsFloat(ctx.input(1), node);
    const Shape shape = tensor::BroadcastShapes(base.shape(), exponent.shape(), node);
    Tensor y(DType::kFloat32, shape, base.device());
    Run(base, exponent, nullptr, y, PowTerm::kValue, node, stream);
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const Tensor& base = ctx.input(0);
    const Tensor exponent = ops::PowExponentAsFloat(ctx.input(1), node);
    if (ctx.needs_grad(0)) {
      Tensor dx(DType::kFloat32, dy->shape(), dy->device());
      Run(base, exponent, dy, dx, PowTerm::kBaseFactor, node, stream);
      ctx.set_input_grad(0, detail::SumToShape(node, dx, base.shape(), stream));
    }
    if (ctx.needs_grad(1) && ctx.input(1).dtype() == DType::kFloat32) {
      Tensor de(DType::kFloat32, dy->shape(), dy->device());
      Run(base, exponent, dy, de, PowTerm::kExponentFactor, node, stream);
      ctx.set_input_grad(1, detail::SumToShape(node, de, exponent.shape(), stream));
    }
  }

  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  // out = term(base, exponent) (times dy when given) over out's shape, in the CPU's forms.
  static void Run(const Tensor& base, const Tensor& exponent, const Tensor* dy, Tensor& out,
                  PowTerm term, const std::string& node, cudaStream_t stream) {
    const float* g = dy != nullptr ? dy->device_data<float>() : nullptr;
    if (exponent.numel() == 1 && base.numel() == out.numel()) {
      // The CPU's one-element form: the exponent's value decides it, so it is read here.
      const float e = exponent.To(tensor::Device::Cpu()).data<float>()[0];
      detail::LaunchPowScalar(base.device_data<float>(), e, g, out.device_data<float>(),
                              out.numel(), term, stream);
    } else {
      detail::LaunchPowBroadcast(
          base.device_data<float>(), exponent.device_data<float>(), g, out.device_data<float>(),
          detail::PlanBroadcast(base.shape(), exponent.shape(), out.shape(), node), term, stream);
    }
  }
};

AUTODIST_REGISTER_DEVICE_KERNEL(Pow, 7, 17, CudaPowKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
