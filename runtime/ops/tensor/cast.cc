// Cast: converts to the element type `to` (float32, float64, int64, int32, uint8, int8, bool),
// with cast_value.h's conversions (shared with the CUDA kernel). A gradient flows only between
// float types: the output gradient cast back to the input's type.
#include "runtime/common/error.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/cast_types.h"
#include "runtime/ops/tensor/cast_value.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

// `x` converted to `to` (the tensor itself when it already has that type).
Tensor CastTensor(const Tensor& x, DType to, const std::string& node) {
  if (x.dtype() == to) return x;
  Tensor y(to, x.shape());
  VisitCastType(x.dtype(), node, [&](auto from_tag) {
    using From = decltype(from_tag);
    VisitCastType(to, node, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* in = x.data<From>();
      To* out = y.data<To>();
      ParallelFor(x.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = CastValue<To>(in[i]);
      });
    });
  });
  return y;
}

struct CastState final : KernelState {
  explicit CastState(DType input) : input_dtype(input) {}
  DType input_dtype;
};

class CastKernel final : public OpKernel {
 public:
  explicit CastKernel(const NodeInfo& node) : OpKernel(node), to_(ParseTo(node)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ctx.save_state(std::make_unique<CastState>(x.dtype()));
    ctx.set_output(0, CastTensor(x, to_, ctx.Describe()));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const DType input_dtype = SavedState<CastState>(ctx).input_dtype;
    if (!IsFloatType(input_dtype)) return;
    ctx.set_input_grad(0, CastTensor(*dy, input_dtype, ctx.Describe()));
  }

  // Integer and bool results carry no gradient.
  bool IsDifferentiable(size_t /*input*/) const override { return IsFloatType(to_); }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  static DType ParseTo(const NodeInfo& node) {
    return CastTarget(node.GetInt("to", 0), node.HasAttribute("to"), node.Describe());
  }

  DType to_;
};

// From opset 6 `to` is an int (before, a string).
AUTODIST_REGISTER_KERNEL(Cast, 6, 17, CastKernel);

}  // namespace
}  // namespace autodist::ops
