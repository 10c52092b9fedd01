// Concat: joins inputs of one dtype (any: float32, int64 shapes...) along `axis` (negative
// counts from the end). Every input is copied as [outer, its axis length * inner] row blocks;
// the gradient of each input is its block of the output gradient.
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/concat_layout.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

struct ConcatState final : KernelState {
  size_t axis = 0;
  std::vector<int64_t> sizes;  // each input's length along the axis
};

class ConcatKernel final : public OpKernel {
 public:
  explicit ConcatKernel(const NodeInfo& node) : OpKernel(node), axis_(ParseConcatAxis(node)) {}

  void Forward(ForwardContext& ctx) const override {
    ConcatLayout layout = ResolveConcat(ctx, axis_, ctx.Describe());
    const Tensor& first = ctx.input(0);
    const size_t axis = layout.axis;
    const Shape& shape = layout.shape;
    auto state = std::make_unique<ConcatState>();
    state->axis = axis;
    state->sizes = layout.sizes;
    if (ctx.num_inputs() == 1) {
      ctx.set_output(0, first);
    } else {
      const int64_t outer = DimProduct(shape, 0, axis);
      const int64_t inner = DimProduct(shape, axis + 1, shape.size());
      Tensor y(first.dtype(), shape);
      int64_t offset = 0;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const int64_t size = state->sizes[i];
        CopyAxisRange(ctx.input(i).raw(), size, 0, y.raw(), shape[axis], offset, size, outer, inner,
                      tensor::ElementSize(y.dtype()));
        offset += size;
      }
      ctx.set_output(0, std::move(y));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const auto& state = SavedState<ConcatState>(ctx);
    const Shape& shape = dy->shape();
    const int64_t outer = DimProduct(shape, 0, state.axis);
    const int64_t inner = DimProduct(shape, state.axis + 1, shape.size());
    int64_t offset = 0;
    for (size_t i = 0; i < state.sizes.size(); ++i) {
      const int64_t size = state.sizes[i];
      if (ctx.needs_grad(i)) {
        Shape input_shape = shape;
        input_shape[state.axis] = size;
        Tensor dx(DType::kFloat32, input_shape);
        CopyAxisRange(dy->raw(), shape[state.axis], offset, dx.raw(), size, 0, size, outer, inner,
                      sizeof(float));
        ctx.set_input_grad(i, std::move(dx));
      }
      offset += size;
    }
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  int64_t axis_;
};

// Opsets 4..10 differ only in rejecting a negative axis, which is harmless to accept.
AUTODIST_REGISTER_KERNEL(Concat, 4, 17, ConcatKernel);

}  // namespace
}  // namespace autodist::ops
