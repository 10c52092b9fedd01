// Sigmoid and Tanh (opsets 6..17) on float32. Both gradients are functions of the output, as in
// PyTorch: Sigmoid dx = dy * (1 - y) * y, Tanh dx = dy * (1 - y^2).
#include "runtime/common/error.h"
#include "runtime/ops/math/elementwise.h"
#include "runtime/ops/math/unary_math.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

template <typename Op>
class OutputGradientActivation final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.dtype() == DType::kFloat32, kInvalidArgument, "{}: input must be float32, got {}",
             ctx.Describe(), tensor::DTypeName(x.dtype()));
    Tensor y(DType::kFloat32, x.shape());
    MapUnary(x.data<float>(), y.data<float>(), x.numel(), [](float v) { return Op::Forward(v); });
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    Tensor dx(DType::kFloat32, dy->shape());
    MapBinary(dy->data<float>(), ctx.output(0).data<float>(), dx.data<float>(), dx.numel(),
              [](float g, float y) { return Op::Grad(g, y); });
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
};

using SigmoidKernel = OutputGradientActivation<SigmoidOp>;
using TanhKernel = OutputGradientActivation<TanhOp>;

AUTODIST_REGISTER_KERNEL(Sigmoid, 6, 17, SigmoidKernel);
AUTODIST_REGISTER_KERNEL(Tanh, 6, 17, TanhKernel);

}  // namespace
}  // namespace autodist::ops
