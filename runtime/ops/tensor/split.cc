// Split: cuts the input along `axis` into one piece per node output. The piece lengths come
// from the optional `split` input (opset 13+) or the `split` attribute (opsets 2..12); without
// them the axis is divided equally, which must be exact. The gradient joins the output
// gradients back together, with zeros for outputs that got none.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>

#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

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
    state->sizes = Sizes(ctx, x.dim(state->axis));
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
  // The length of each output along the axis (of length `length`), validated.
  std::vector<int64_t> Sizes(const ForwardContext& ctx, int64_t length) const {
    const auto outputs = static_cast<int64_t>(ctx.num_outputs());
    AD_CHECK(outputs > 0, kInvalidArgument, "{}: needs at least one output", ctx.Describe());
    std::vector<int64_t> sizes;
    if (split_is_input_ && ctx.has_input(1)) {
      sizes = ctx.input(1).ToInt64Vector(ctx.Describe() + ": split");
    } else if (!split_is_input_ && !split_attribute_.empty()) {
      sizes = split_attribute_;
    } else {
      AD_CHECK(length % outputs == 0, kInvalidArgument,
               "{}: an axis of length {} cannot be split equally into {} outputs", ctx.Describe(),
               length, outputs);
      sizes.assign(static_cast<size_t>(outputs), length / outputs);
      return sizes;
    }
    bool valid = static_cast<int64_t>(sizes.size()) == outputs &&
                 std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == length;
    for (const int64_t size : sizes) valid = valid && size >= 0;
    AD_CHECK(valid, kInvalidArgument,
             "{}: split [{}] must be {} non-negative lengths summing to the axis length {}",
             ctx.Describe(), fmt::join(sizes, ", "), outputs, length);
    return sizes;
  }

  int64_t axis_;
  bool split_is_input_;
  std::vector<int64_t> split_attribute_;
};

AUTODIST_REGISTER_KERNEL(Split, 2, 17, SplitKernel);

}  // namespace
}  // namespace autodist::ops
