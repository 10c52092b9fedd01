// Add, Sub, Mul, Div (opsets 7..17) with ONNX multidirectional broadcasting, on float32 and on
// int64 (exported graphs compute shapes with these ops). Integer Div truncates toward zero, as
// C++ and ONNX Runtime do. Gradients of a broadcast operand are summed back to its shape.
#include <cstdint>
#include <memory>

#include "runtime/common/error.h"
#include "runtime/ops/math/arithmetic_math.h"
#include "runtime/ops/math/elementwise.h"
#include "runtime/ops/math/reduce_sum.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::ops {
namespace {

// Add and Sub read no input values in Backward, only the shapes kept here.
struct OperandShapes final : KernelState {
  Shape a;
  Shape b;
};

template <Arithmetic kOp>
class ArithmeticKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    AD_CHECK(a.dtype() == b.dtype(), kInvalidArgument,
             "{}: operands must have the same element type, got {} and {}", ctx.Describe(),
             tensor::DTypeName(a.dtype()), tensor::DTypeName(b.dtype()));
    const Shape shape = tensor::BroadcastShapes(a.shape(), b.shape(), ctx.Describe());
    Tensor y(a.dtype(), shape);
    if (a.dtype() == DType::kFloat32) {
      BroadcastBinary(a.data<float>(), a.shape(), b.data<float>(), b.shape(), y.data<float>(),
                      shape, ArithmeticOp<kOp, float>{});
    } else if (a.dtype() == DType::kInt64) {
      if constexpr (kOp == Arithmetic::kDiv) {
        const auto* divisor = b.data<int64_t>();
        for (int64_t i = 0; i < b.numel(); ++i) {
          AD_CHECK(divisor[i] != 0, kInvalidArgument, "{}: integer division by zero",
                   ctx.Describe());
        }
      }
      BroadcastBinary(a.data<int64_t>(), a.shape(), b.data<int64_t>(), b.shape(), y.data<int64_t>(),
                      shape, ArithmeticOp<kOp, int64_t>{});
    } else {
      Fail(ErrorCode::kInvalidArgument, "{}: supports float32 and int64 operands, got {}",
           ctx.Describe(), tensor::DTypeName(a.dtype()));
    }
    // Div keeps only its divisor and output, so it needs the dividend's shape from here too.
    if constexpr (kOp != Arithmetic::kMul) {
      if (a.dtype() == DType::kFloat32) {
        auto state = std::make_unique<OperandShapes>();
        state->a = a.shape();
        state->b = b.shape();
        ctx.save_state(std::move(state));
      }
    }
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || dy->dtype() != DType::kFloat32) return;
    if constexpr (kOp == Arithmetic::kAdd || kOp == Arithmetic::kSub) {
      const auto* shapes = &SavedState<OperandShapes>(ctx);
      if (ctx.needs_grad(0)) ctx.set_input_grad(0, SumToShape(*dy, shapes->a));
      if (ctx.needs_grad(1)) {
        Tensor db = SumToShape(*dy, shapes->b);
        if constexpr (kOp == Arithmetic::kSub) db = Negated(db);
        ctx.set_input_grad(1, std::move(db));
      }
    } else {
      const Tensor& b = ctx.input(1);
      const auto* g = dy->data<float>();
      const auto* z = b.data<float>();
      const Shape& shape = dy->shape();
      // Each gradient is computed at the broadcast shape, then summed to the operand's shape.
      if (ctx.needs_grad(0)) {
        Tensor da(DType::kFloat32, shape);
        if constexpr (kOp == Arithmetic::kMul) {  // da = dy * b
          BroadcastBinary(g, shape, z, b.shape(), da.data<float>(), shape, TimesOp{});
        } else {  // da = dy / b
          BroadcastBinary(g, shape, z, b.shape(), da.data<float>(), shape, OverOp{});
        }
        const Shape a_shape = [&] {
          if constexpr (kOp == Arithmetic::kDiv) {
            const auto* shapes = &SavedState<OperandShapes>(ctx);
            return shapes->a;
          } else {
            return ctx.input(0).shape();
          }
        }();
        ctx.set_input_grad(0, SumToShape(da, a_shape));
      }
      if (ctx.needs_grad(1)) {
        Tensor db(DType::kFloat32, shape);
        auto* d = db.data<float>();
        if constexpr (kOp == Arithmetic::kMul) {  // db = dy * a
          const Tensor& a = ctx.input(0);
          BroadcastBinary(g, shape, a.data<float>(), a.shape(), d, shape, TimesOp{});
        } else {  // db = -dy * ((a / b) / b) as PyTorch computes it, with a / b = y
          BroadcastBinary(ctx.output(0).data<float>(), shape, z, b.shape(), d, shape, OverOp{});
          MapBinary(g, d, d, db.numel(), NegTimesOp{});
        }
        ctx.set_input_grad(1, SumToShape(db, b.shape()));
      }
    }
  }

  // Mul reads both operands; Div reads the divisor and its own output.
  bool BackwardNeedsInput(size_t input) const override {
    return kOp == Arithmetic::kMul || (kOp == Arithmetic::kDiv && input == 1);
  }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return kOp == Arithmetic::kDiv; }

 private:
  static Tensor Negated(const Tensor& t) {
    Tensor out(DType::kFloat32, t.shape());
    MapUnary(t.data<float>(), out.data<float>(), t.numel(), NegateOp{});
    return out;
  }
};

using AddKernel = ArithmeticKernel<Arithmetic::kAdd>;
using SubKernel = ArithmeticKernel<Arithmetic::kSub>;
using MulKernel = ArithmeticKernel<Arithmetic::kMul>;
using DivKernel = ArithmeticKernel<Arithmetic::kDiv>;

AUTODIST_REGISTER_KERNEL(Add, 7, 17, AddKernel);
AUTODIST_REGISTER_KERNEL(Sub, 7, 17, SubKernel);
AUTODIST_REGISTER_KERNEL(Mul, 7, 17, MulKernel);
AUTODIST_REGISTER_KERNEL(Div, 7, 17, DivKernel);

}  // namespace
}  // namespace autodist::ops
