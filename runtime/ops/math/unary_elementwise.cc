// Neg, Exp, Log, Sqrt (opsets 6..17) and Erf (9..17) on float32; Neg also on int64 (shape
// arithmetic). Their math, and what each gradient reads (so the executor can free the rest), is
// in unary_math.h.
#include "runtime/common/error.h"
#include "runtime/ops/math/elementwise.h"
#include "runtime/ops/math/unary_math.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

template <typename Op>
class UnaryKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor y(x.dtype(), x.shape());
    if (x.dtype() == DType::kFloat32) {
      MapUnary(x.data<float>(), y.data<float>(), x.numel(), [](float v) { return Op::Forward(v); });
    } else if (Op::kInt64 && x.dtype() == DType::kInt64) {
      if constexpr (Op::kInt64) {
        MapUnary(x.data<int64_t>(), y.data<int64_t>(), x.numel(),
                 [](int64_t v) { return Op::Forward(v); });
      }
    } else {
      Fail(ErrorCode::kInvalidArgument, "{}: supports {}, got {}", ctx.Describe(),
           Op::kInt64 ? "float32 and int64" : "float32", tensor::DTypeName(x.dtype()));
    }
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0) || dy->dtype() != DType::kFloat32) return;
    Tensor dx(DType::kFloat32, dy->shape());
    const auto* g = dy->data<float>();
    if constexpr (Op::kReads == GradReads::kNothing) {
      MapUnary(g, dx.data<float>(), dx.numel(), [](float gi) { return Op::Grad(gi, 0.0F); });
    } else {
      const Tensor& saved = Op::kReads == GradReads::kInput ? ctx.input(0) : ctx.output(0);
      MapBinary(g, saved.data<float>(), dx.data<float>(), dx.numel(),
                [](float gi, float vi) { return Op::Grad(gi, vi); });
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override {
    return Op::kReads == GradReads::kInput;
  }
  bool BackwardNeedsOutput(size_t /*output*/) const override {
    return Op::kReads == GradReads::kOutput;
  }
};

using NegKernel = UnaryKernel<NegOp>;
using ExpKernel = UnaryKernel<ExpOp>;
using LogKernel = UnaryKernel<LogOp>;
using SqrtKernel = UnaryKernel<SqrtOp>;
using ErfKernel = UnaryKernel<ErfOp>;

AUTODIST_REGISTER_KERNEL(Neg, 6, 17, NegKernel);
AUTODIST_REGISTER_KERNEL(Exp, 6, 17, ExpKernel);
AUTODIST_REGISTER_KERNEL(Log, 6, 17, LogKernel);
AUTODIST_REGISTER_KERNEL(Sqrt, 6, 17, SqrtKernel);
AUTODIST_REGISTER_KERNEL(Erf, 9, 17, ErfKernel);

}  // namespace
}  // namespace autodist::ops
