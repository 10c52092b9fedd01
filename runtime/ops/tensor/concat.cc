// Concat: joins inputs of one dtype (any: float32, int64 shapes...) along `axis` (negative
// counts from the end). Every input is copied as [outer, its axis length * inner] row blocks;
// the gradient of each input is its block of the output gradient.
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

struct ConcatState final : KernelState {
  size_t axis = 0;
  std::vector<int64_t> sizes;  // each input's length along the axis
};

class ConcatKernel final : public OpKernel {
 public:
  explicit ConcatKernel(const NodeInfo& node) : OpKernel(node), axis_(node.GetInt("axis", 0)) {
    AD_CHECK(node.HasAttribute("axis"), kInvalidArgument, "{}: attribute 'axis' is required",
             node.Describe());
  }

  void Forward(ForwardContext& ctx) const override {
    AD_CHECK(ctx.num_inputs() > 0, kInvalidArgument, "{}: needs at least one input",
             ctx.Describe());
    const Tensor& first = ctx.input(0);
    AD_CHECK(first.rank() > 0, kInvalidArgument, "{}: cannot concatenate scalars", ctx.Describe());
    const auto axis = static_cast<size_t>(
        NormalizeAxis(axis_, static_cast<int64_t>(first.rank()), ctx.Describe(), "axis"));
    auto state = std::make_unique<ConcatState>();
    state->axis = axis;
    Shape shape = first.shape();
    shape[axis] = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      AD_CHECK(x.dtype() == first.dtype(), kInvalidArgument, "{}: input {} is {} but input 0 is {}",
               ctx.Describe(), i, tensor::DTypeName(x.dtype()), tensor::DTypeName(first.dtype()));
      bool matches = x.rank() == first.rank();
      for (size_t d = 0; matches && d < x.rank(); ++d)
        matches = d == axis || x.dim(d) == first.dim(d);
      AD_CHECK(matches, kInvalidArgument,
               "{}: input {} has shape {}, which does not match input 0 {} outside axis {}",
               ctx.Describe(), i, tensor::ShapeToString(x.shape()),
               tensor::ShapeToString(first.shape()), axis);
      state->sizes.push_back(x.dim(axis));
      shape[axis] += x.dim(axis);
    }
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
