// Add, Sub, Mul, Div on CUDA (opsets 7..17), float32, with ONNX multidirectional broadcasting;
// the gradient of a broadcast operand is summed back to its shape. The math and its order are the
// CPU kernel's (runtime/ops/math/arithmetic.cc, arithmetic_math.h).
#include <memory>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/math/arithmetic_math.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::gpu {
namespace {

using ops::Arithmetic;
using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

struct OperandShapes final : ops::KernelState {
  Shape a;
  Shape b;
};

using detail::SumToShape;

template <typename Fn>
Tensor Broadcast(const std::string& node, const Tensor& a, const Tensor& b, const Shape& shape,
                 cudaStream_t stream) {
  Tensor out(DType::kFloat32, shape, a.device());
  detail::LaunchBroadcastBinary<Fn>(
      a.device_data<float>(), b.device_data<float>(), out.device_data<float>(),
      detail::PlanBroadcast(a.shape(), b.shape(), shape, node), stream);
  return out;
}

template <Arithmetic kOp>
class CudaArithmeticKernel final : public ops::OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ops::ForwardContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, a);
    detail::StreamOf(node, b);
    AD_CHECK(a.device() == b.device(), kInternal, "{}: operands on {} and {}", node,
             tensor::DeviceName(a.device()), tensor::DeviceName(b.device()));
    detail::RequireFloat32(node, a, "operand A");
    detail::RequireFloat32(node, b, "operand B");
    const Shape shape = tensor::BroadcastShapes(a.shape(), b.shape(), node);
    ctx.set_output(0, Broadcast<ops::ArithmeticOp<kOp, float>>(node, a, b, shape, stream));
    if constexpr (kOp != Arithmetic::kMul) {
      auto state = std::make_unique<OperandShapes>();
      state->a = a.shape();
      state->b = b.shape();
      ctx.save_state(std::move(state));
    }
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const Shape& shape = dy->shape();
    if constexpr (kOp == Arithmetic::kAdd || kOp == Arithmetic::kSub) {
      const OperandShapes& shapes = Shapes(ctx);
      if (ctx.needs_grad(0)) ctx.set_input_grad(0, SumToShape(node, *dy, shapes.a, stream));
      if (ctx.needs_grad(1)) {
        Tensor db = SumToShape(node, *dy, shapes.b, stream);
        if constexpr (kOp == Arithmetic::kSub) {
          Tensor negated(DType::kFloat32, db.shape(), db.device());
          detail::LaunchMapUnary<ops::NegateOp>(db.device_data<float>(),
                                                negated.device_data<float>(), db.numel(), stream);
          db = std::move(negated);
        }
        ctx.set_input_grad(1, std::move(db));
      }
    } else {
      const Tensor& b = ctx.input(1);
      if (ctx.needs_grad(0)) {
        using Step = std::conditional_t<kOp == Arithmetic::kMul, ops::TimesOp, ops::OverOp>;
        const Tensor da = Broadcast<Step>(node, *dy, b, shape, stream);
        const Shape a_shape = kOp == Arithmetic::kDiv ? Shapes(ctx).a : ctx.input(0).shape();
        ctx.set_input_grad(0, SumToShape(node, da, a_shape, stream));
      }
      if (ctx.needs_grad(1)) {
        Tensor db;
        if constexpr (kOp == Arithmetic::kMul) {  // db = dy * a
          db = Broadcast<ops::TimesOp>(node, *dy, ctx.input(0), shape, stream);
        } else {  // db = -dy * ((a / b) / b), with a / b = y
          const Tensor quotient = Broadcast<ops::OverOp>(node, ctx.output(0), b, shape, stream);
          db = Broadcast<ops::NegTimesOp>(node, *dy, quotient, shape, stream);
        }
        ctx.set_input_grad(1, SumToShape(node, db, b.shape(), stream));
      }
    }
  }

  bool BackwardNeedsInput(size_t input) const override {
    return kOp == Arithmetic::kMul || (kOp == Arithmetic::kDiv && input == 1);
  }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return kOp == Arithmetic::kDiv; }

 private:
  static const OperandShapes& Shapes(const ops::BackwardContext& ctx) {
    const auto* shapes = &ops::SavedState<OperandShapes>(ctx);
    return *shapes;
  }
};

AUTODIST_REGISTER_DEVICE_KERNEL(Add, 7, 17, CudaArithmeticKernel<Arithmetic::kAdd>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Sub, 7, 17, CudaArithmeticKernel<Arithmetic::kSub>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Mul, 7, 17, CudaArithmeticKernel<Arithmetic::kMul>, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Div, 7, 17, CudaArithmeticKernel<Arithmetic::kDiv>, kCuda);

}  // namespace
}  // namespace autodist::gpu
