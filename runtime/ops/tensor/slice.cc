// Slice (opsets 10..17): data[starts:ends:steps] on the listed axes (all axes 0..n-1 when `axes`
// is absent; steps default to 1 and may be negative). Starts and ends are clamped as ONNX (and
// numpy) define, so INT64_MAX means "to the end" and INT64_MIN "before the start". The output is
// a strided view of the input copied out; the gradient writes the output gradient back into
// those positions of a zero tensor.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

// Where the output sits inside the input: the offset of its first element and the input stride
// (in elements) of each output axis.
struct SliceState final : KernelState {
  Shape input_shape;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

// Input i (starts, ends, axes or steps) as a 1-D integer list.
std::vector<int64_t> IndexList(const ForwardContext& ctx, size_t i, const char* name) {
  const Tensor& list = ctx.input(i);
  AD_CHECK(list.rank() == 1, kInvalidArgument, "{}: {} must be 1-D, got shape {}", ctx.Describe(),
           name, tensor::ShapeToString(list.shape()));
  return list.ToInt64Vector(fmt::format("{}: {}", ctx.Describe(), name));
}

class SliceKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    const std::vector<int64_t> starts = IndexList(ctx, 1, "starts");
    const std::vector<int64_t> ends = IndexList(ctx, 2, "ends");
    std::vector<int64_t> axes;
    if (ctx.has_input(3)) {
      axes = IndexList(ctx, 3, "axes");
    } else {
      for (size_t j = 0; j < starts.size(); ++j) axes.push_back(static_cast<int64_t>(j));
    }
    const std::vector<int64_t> steps =
        ctx.has_input(4) ? IndexList(ctx, 4, "steps") : std::vector<int64_t>(starts.size(), 1);
    AD_CHECK(ends.size() == starts.size() && axes.size() == starts.size() &&
                 steps.size() == starts.size(),
             kInvalidArgument,
             "{}: starts, ends, axes and steps must have equal lengths, got {}, {}, {} and {}",
             ctx.Describe(), starts.size(), ends.size(), axes.size(), steps.size());

    const std::vector<int64_t> in_strides = tensor::Strides(x.shape());
    Shape shape = x.shape();
    auto state = std::make_unique<SliceState>();
    state->input_shape = x.shape();
    state->strides = in_strides;
    std::vector<bool> seen(x.rank(), false);
    for (size_t j = 0; j < starts.size(); ++j) {
      const auto axis = static_cast<size_t>(NormalizeAxis(axes[j], rank, ctx.Describe(), "axis"));
      AD_CHECK(!seen[axis], kInvalidArgument, "{}: axes [{}] name axis {} twice", ctx.Describe(),
               fmt::join(axes, ", "), axis);
      seen[axis] = true;
      AD_CHECK(steps[j] != 0, kInvalidArgument, "{}: steps [{}] contain a 0", ctx.Describe(),
               fmt::join(steps, ", "));
      const int64_t dim = x.dim(axis);
      // A step longer than the axis takes one element at most, so bounding it changes nothing
      // and keeps the arithmetic below from overflowing.
      const int64_t step =
          std::clamp(steps[j], -std::max<int64_t>(dim, 1), std::max<int64_t>(dim, 1));
      int64_t start = starts[j] < 0 ? starts[j] + dim : starts[j];
      int64_t end = ends[j] < 0 ? ends[j] + dim : ends[j];
      int64_t count = 0;
      if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        count = end > start ? (end - start + step - 1) / step : 0;
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        count = start > end ? (start - end - step - 1) / -step : 0;
      }
      shape[axis] = count;
      state->offset += start * in_strides[axis];
      state->strides[axis] = in_strides[axis] * step;
    }

    if (shape == x.shape() && state->offset == 0 && state->strides == in_strides) {
      ctx.set_output(0, x);  // the whole input: no copy
    } else {
      Tensor y(x.dtype(), shape);
      if (y.numel() > 0) {
        const size_t element = tensor::ElementSize(x.dtype());
        CopyStrided(static_cast<const std::byte*>(x.raw()) + state->offset * element,
                    state->strides, y.raw(), tensor::Strides(shape), shape, element);
      }
      ctx.set_output(0, std::move(y));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const auto& state = SavedState<SliceState>(ctx);
    Tensor dx = Tensor::Zeros(DType::kFloat32, state.input_shape);
    if (dy->numel() > 0) {
      CopyStrided(dy->raw(), tensor::Strides(dy->shape()), dx.data<float>() + state.offset,
                  state.strides, dy->shape(), sizeof(float));
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
};

// From opset 10 starts/ends/axes/steps are inputs (before, attributes without steps).
AUTODIST_REGISTER_KERNEL(Slice, 10, 17, SliceKernel);

}  // namespace
}  // namespace autodist::ops
