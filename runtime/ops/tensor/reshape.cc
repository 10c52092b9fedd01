// Reshape: a zero-copy view of the data with the shape given by input 1. In the shape, -1 (at
// most once) is inferred from the element count and 0 copies the input's dimension at the same
// position — unless `allowzero` (opset 14) is set, which makes 0 a literal zero-sized axis.
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"
#include "runtime/ops/tensor/reshape_shape.h"

namespace autodist::ops {
namespace {

class ReshapeKernel final : public OpKernel {
 public:
  explicit ReshapeKernel(const NodeInfo& node)
      : OpKernel(node), allow_zero_(node.GetInt("allowzero", 0) != 0) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(ctx.input(1).rank() == 1, kInvalidArgument, "{}: shape must be 1-D, got shape {}",
             ctx.Describe(), tensor::ShapeToString(ctx.input(1).shape()));
    const std::vector<int64_t> requested = ctx.input(1).ToInt64Vector(ctx.Describe() + ": shape");
    Shape shape = ResolveReshape(requested, x.shape(), allow_zero_, ctx.Describe());
    ctx.save_state(std::make_unique<ShapeState>(x.shape()));
    ctx.set_output(0, x.Reshaped(std::move(shape)));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    ctx.set_input_grad(0, dy->Reshaped(SavedState<ShapeState>(ctx).shape));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  bool allow_zero_;
};

// Opsets 5..13 have no allowzero attribute (GetInt's default 0 gives their semantics).
AUTODIST_REGISTER_KERNEL(Reshape, 5, 17, ReshapeKernel);

}  // namespace
}  // namespace autodist::ops
