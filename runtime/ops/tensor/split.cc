// Split: cuts the input along `axis` into one piece per node output. The piece lengths come
// from the optional `split` input (opset 13+) or the `split` attribute (opsets 2..12); without
// them the axis is divided equally, which must be exact. The gradient joins the output
// gradients back together, with zeros for outputs that got none.
#include <optional>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"
#include "runtime/ops/tensor/split_sizes.h"

namespace autodist::ops {
namespace {

struct SplitState final : KernelState {
  Shape input_shape;
  size_t axis = 0;
  std::vector<int64_t> sizes;
};

class SplitKernel final : public OpKernel {
 public:
  explicit SplitKernel(const NodeInfo& node)
      : OpKernel(node),
        axis_(node.GetInt("axis", 0)),
        split_is_input_(node.opset() >= 13),
        split_attribute_(node.GetInts("split", {})) {
    AD_CHECK(!split_is_input_ || !node.HasAttribute("split"), kInvalidArgument,
             "{}: from opset 13 'split' is an input, not an attribute", node.Describe());
    AD_CHECK(split_is_input_ || node.num_inputs() <= 1, kInvalidArgument,
             "{}: before opset 13 'split' is an attribute, not an input", node.Describe());
  }

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.rank() > 0, kInvalidArgument, "{}: cannot split a scalar", ctx.Describe());
    auto state = std::make_unique<SplitState>();
    state->input_shape = x.shape();
    state->axis = static_cast<size_t>(
        NormalizeAxis(axis_, static_cast<int64_t>(x.rank()), ctx.Describe(), "axis"));
    std::optional<std::vector<int64_t>> given;
    if (split_is_input_ && ctx.has_input(1)) {
      given = ctx.input(1).ToInt64Vector(ctx.Describe() + ": split");
    } else if (!split_is_input_ && !split_attribute_.empty()) {
      given = split_attribute_;
    }
    state->sizes = SplitSizes(given, static_cast<int64_t>(ctx.num_outputs()), x.dim(state->axis),
                              ctx.Describe());
    const size_t axis = state->axis;
    if (ctx.num_outputs() == 1) {
      ctx.set_output(0, x);
    } else {
      const int64_t outer = DimProduct(x.shape(), 0, axis);
      const int64_t inner = DimProduct(x.shape(), axis + 1, x.rank());
      int64_t offset = 0;
      for (size_t o = 0; o < ctx.num_outputs(); ++o) {
        const int64_t size = state->sizes[o];
        Shape shape = x.shape();
        shape[axis] = size;
        Tensor y(x.dtype(), std::move(shape));
        CopyAxisRange(x.raw(), x.dim(axis), offset, y.raw(), size, 0, size, outer, inner,
                      tensor::ElementSize(x.dtype()));
        ctx.set_output(o, std::move(y));
        offset += size;
      }
    }
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    if (!ctx.needs_grad(0)) return;
    const auto& state = SavedState<SplitState>(ctx);
    bool all = true;
    bool any = false;
    for (size_t o = 0; o < state.sizes.size(); ++o) {
      all = all && ctx.output_grad(o) != nullptr;
      any = any || ctx.output_grad(o) != nullptr;
    }
    if (!any) return;
    const Shape& shape = state.input_shape;
    const size_t axis = state.axis;
    Tensor dx = all ? Tensor(DType::kFloat32, shape) : Tensor::Zeros(DType::kFloat32, shape);
    const int64_t outer = DimProduct(shape, 0, axis);
    const int64_t inner = DimProduct(shape, axis + 1, shape.size());
    int64_t offset = 0;
    for (size_t o = 0; o < state.sizes.size(); ++o) {
      const int64_t size = state.sizes[o];
      if (const Tensor* dy = ctx.output_grad(o); dy != nullptr) {
        CopyAxisRange(dy->raw(), size, 0, dx.raw(), shape[axis], offset, size, outer, inner,
                      sizeof(float));
      }
      offset += size;
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  int64_t axis_;
  bool split_is_input_;
  std::vector<int64_t> split_attribute_;
};

AUTODIST_REGISTER_KERNEL(Split, 2, 17, SplitKernel);

}  // namespace
}  // namespace autodist::ops
