// Squeeze and Unsqueeze: remove or insert size-1 axes, as zero-copy views. The axes are an input
// from opset 13 and an attribute before. Squeeze without axes (or with an empty list, as ONNX
// Runtime treats it) removes every size-1 axis; Unsqueeze's axes index the output.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

// The shared part: where the axes come from, and a gradient that is the output gradient viewed
// with the input's shape.
class AxesViewKernel : public OpKernel {
 public:
  explicit AxesViewKernel(const NodeInfo& node)
      : OpKernel(node),
        axes_are_input_(node.opset() >= 13),
        axes_attribute_(node.GetInts("axes", {})) {
    AD_CHECK(!axes_are_input_ || !node.HasAttribute("axes"), kInvalidArgument,
             "{}: from opset 13 'axes' is an input, not an attribute", node.Describe());
  }

  void Forward(ForwardContext& ctx) const final {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> axes = axes_attribute_;
    if (axes_are_input_ && ctx.has_input(1)) {
      AD_CHECK(ctx.input(1).rank() <= 1, kInvalidArgument, "{}: axes must be 1-D, got shape {}",
               ctx.Describe(), tensor::ShapeToString(ctx.input(1).shape()));
      axes = ctx.input(1).ToInt64Vector(ctx.Describe() + ": axes");
    }
    ctx.save_state(std::make_unique<ShapeState>(x.shape()));
    ctx.set_output(0, x.Reshaped(OutputShape(x.shape(), axes, ctx.Describe())));
  }

  void Backward(BackwardContext& ctx) const final {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    ctx.set_input_grad(0, dy->Reshaped(SavedState<ShapeState>(ctx).shape));
  }

  bool IsDifferentiable(size_t input) const final { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const final { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const final { return false; }

 protected:
  // The output shape for `input` and the (unnormalized) axes; throws naming `node`.
  virtual Shape OutputShape(const Shape& input, const std::vector<int64_t>& axes,
                            const std::string& node) const = 0;

  // Axes normalized against `rank`, as a mask; throws on an axis out of range or repeated.
  static std::vector<bool> AxisMask(const std::vector<int64_t>& axes, int64_t rank,
                                    const std::string& node) {
    std::vector<bool> mask(static_cast<size_t>(rank), false);
    for (const int64_t axis : axes) {
      const auto k = static_cast<size_t>(NormalizeAxis(axis, rank, node, "axis"));
      AD_CHECK(!mask[k], kInvalidArgument, "{}: axes [{}] name axis {} twice", node,
               fmt::join(axes, ", "), k);
      mask[k] = true;
    }
    return mask;
  }

 private:
  bool axes_are_input_;
  std::vector<int64_t> axes_attribute_;
};

class SqueezeKernel final : public AxesViewKernel {
 public:
  using AxesViewKernel::AxesViewKernel;

 private:
  Shape OutputShape(const Shape& input, const std::vector<int64_t>& axes,
                    const std::string& node) const override {
    const std::vector<bool> mask = AxisMask(axes, static_cast<int64_t>(input.size()), node);
    Shape shape;
    for (size_t k = 0; k < input.size(); ++k) {
      if (axes.empty() ? input[k] == 1 : mask[k]) {
        AD_CHECK(input[k] == 1, kInvalidArgument,
                 "{}: cannot squeeze axis {} of shape {}: its size is not 1", node, k,
                 tensor::ShapeToString(input));
        continue;
      }
      shape.push_back(input[k]);
    }
    return shape;
  }
};

class UnsqueezeKernel final : public AxesViewKernel {
 public:
  using AxesViewKernel::AxesViewKernel;

 private:
  Shape OutputShape(const Shape& input, const std::vector<int64_t>& axes,
                    const std::string& node) const override {
    AD_CHECK(!axes.empty(), kInvalidArgument, "{}: axes are required", node);
    const auto rank = static_cast<int64_t>(input.size() + axes.size());
    const std::vector<bool> mask = AxisMask(axes, rank, node);
    Shape shape;
    auto next = input.begin();
    for (const bool inserted : mask) shape.push_back(inserted ? 1 : *next++);
    return shape;
  }
};

// One class serves both signatures (axes an attribute in opsets 1..12, an input in 13..17): the
// constructor picks by opset.
AUTODIST_REGISTER_KERNEL(Squeeze, 1, 17, SqueezeKernel);
AUTODIST_REGISTER_KERNEL(Unsqueeze, 1, 17, UnsqueezeKernel);
// Views work on any device's tensors (an axes input on the device is read through a host copy,
// Tensor::ToInt64Vector): the same kernels serve the CUDA backend.
AUTODIST_REGISTER_DEVICE_KERNEL(Squeeze, 1, 17, SqueezeKernel, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Unsqueeze, 1, 17, UnsqueezeKernel, kCuda);

}  // namespace
}  // namespace autodist::ops
