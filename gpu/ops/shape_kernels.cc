// The CUDA kernels of the ops that give data another shape, with the CPU kernels' semantics:
//   Constant: its value (ops/tensor/constant_value.h) put on the session's GPU once, when the
//     kernel is made; every run returns that (never written) tensor.
//   Reshape: a view; its target shape is read at planning when it is a constant
//     (NodeInfo::ConstantInput), else copied back from the device each run.
//   Split: each piece copied out along the axis, the gradient joined back (zeros for pieces that
//     got none); the lengths, like Reshape's shape, read once when constant.
//   Concat: each input copied into its range along the axis; each input's gradient copied out.
#include <optional>
#include <vector>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/concat_layout.h"
#include "runtime/ops/tensor/constant_value.h"
#include "runtime/ops/tensor/layout.h"
#include "runtime/ops/tensor/reshape_shape.h"
#include "runtime/ops/tensor/split_sizes.h"

namespace autodist::gpu {
namespace {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

// An int64 input's values: from the planner when known there, else copied from the device.
std::vector<int64_t> IntegerInput(const std::optional<std::vector<int64_t>>& constant,
                                  const Tensor& input, const std::string& what) {
  if (constant.has_value()) return *constant;
  return input.To(tensor::Device::Cpu()).ToInt64Vector(what);
}

std::optional<std::vector<int64_t>> ConstantIntegers(const ops::NodeInfo& node, size_t input,
                                                     const std::string& what) {
  const Tensor* value = node.ConstantInput(input);
  if (value == nullptr) return std::nullopt;
  return value->ToInt64Vector(what);
}

class CudaConstantKernel final : public ops::OpKernel {
 public:
  explicit CudaConstantKernel(const ops::NodeInfo& node)
      : OpKernel(node), value_(ops::ConstantValue(node).To(node.device())) {}

  void Forward(ops::ForwardContext& ctx) const override { ctx.set_output(0, value_); }

 private:
  Tensor value_;
};

struct ShapeState final : ops::KernelState {
  Shape shape;
};

class CudaReshapeKernel final : public ops::OpKernel {
 public:
  explicit CudaReshapeKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        allow_zero_(node.GetInt("allowzero", 0) != 0),
        shape_(ConstantIntegers(node, 1, node.Describe() + ": shape")) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    AD_CHECK(ctx.input(1).rank() == 1, kInvalidArgument, "{}: shape must be 1-D, got shape {}",
             node, tensor::ShapeToString(ctx.input(1).shape()));
    const std::vector<int64_t> requested = IntegerInput(shape_, ctx.input(1), node + ": shape");
    Shape shape = ops::ResolveReshape(requested, x.shape(), allow_zero_, node);
    auto state = std::make_unique<ShapeState>();
    state->shape = x.shape();
    ctx.save_state(std::move(state));
    ctx.set_output(0, x.Reshaped(std::move(shape)));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const auto* state = &ops::SavedState<ShapeState>(ctx);
    ctx.set_input_grad(0, dy->Reshaped(state->shape));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  bool allow_zero_;
  std::optional<std::vector<int64_t>> shape_;
};

struct SplitState final : ops::KernelState {
  Shape input_shape;
  size_t axis = 0;
  std::vector<int64_t> sizes;
};

class CudaSplitKernel final : public ops::OpKernel {
 public:
  explicit CudaSplitKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        axis_(node.GetInt("axis", 0)),
        split_is_input_(node.opset() >= 13),
        split_attribute_(node.GetInts("split", {})),
        split_input_(split_is_input_ ? ConstantIntegers(node, 1, node.Describe() + ": split")
                                     : std::nullopt) {
    AD_CHECK(!split_is_input_ || !node.HasAttribute("split"), kInvalidArgument,
             "{}: from opset 13 'split' is an input, not an attribute", node.Describe());
    AD_CHECK(split_is_input_ || node.num_inputs() <= 1, kInvalidArgument,
             "{}: before opset 13 'split' is an attribute, not an input", node.Describe());
  }

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    AD_CHECK(x.rank() > 0, kInvalidArgument, "{}: cannot split a scalar", node);
    const size_t element_size = detail::RequireMovableElements(node, x, "the input");
    auto state = std::make_unique<SplitState>();
    state->input_shape = x.shape();
    state->axis = static_cast<size_t>(
        ops::NormalizeAxis(axis_, static_cast<int64_t>(x.rank()), node, "axis"));
    std::optional<std::vector<int64_t>> given;
    if (split_is_input_ && ctx.has_input(1)) {
      given = IntegerInput(split_input_, ctx.input(1), node + ": split");
    } else if (!split_is_input_ && !split_attribute_.empty()) {
      given = split_attribute_;
    }
    state->sizes =
        ops::SplitSizes(given, static_cast<int64_t>(ctx.num_outputs()), x.dim(state->axis), node);
    const size_t axis = state->axis;
    if (ctx.num_outputs() == 1) {
      ctx.set_output(0, x);
    } else {
      const int64_t outer = ops::DimProduct(x.shape(), 0, axis);
      const int64_t inner = ops::DimProduct(x.shape(), axis + 1, x.rank());
      int64_t offset = 0;
      for (size_t o = 0; o < ctx.num_outputs(); ++o) {
        const int64_t size = state->sizes[o];
        Shape shape = x.shape();
        shape[axis] = size;
        Tensor y(x.dtype(), std::move(shape), x.device());
        detail::LaunchCopyAxisRange(x.raw(), x.dim(axis), offset, y.raw(), size, 0, size, outer,
                                    inner, element_size, stream);
        ctx.set_output(o, std::move(y));
        offset += size;
      }
    }
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    if (!ctx.needs_grad(0)) return;
    const std::string& node = description();
    const auto* state = &ops::SavedState<SplitState>(ctx);
    bool all = true;
    const Tensor* any = nullptr;
    for (size_t o = 0; o < state->sizes.size(); ++o) {
      const Tensor* dy = ctx.output_grad(o);
      all = all && dy != nullptr;
      if (any == nullptr) any = dy;
    }
    if (any == nullptr) return;
    cudaStream_t stream = detail::StreamOf(node, *any);
    const Shape& shape = state->input_shape;
    const size_t axis = state->axis;
    Tensor dx(DType::kFloat32, shape, any->device());
    if (!all) dx.SetZero();
    const int64_t outer = ops::DimProduct(shape, 0, axis);
    const int64_t inner = ops::DimProduct(shape, axis + 1, shape.size());
    int64_t offset = 0;
    for (size_t o = 0; o < state->sizes.size(); ++o) {
      const int64_t size = state->sizes[o];
      if (const Tensor* dy = ctx.output_grad(o); dy != nullptr) {
        detail::LaunchCopyAxisRange(dy->raw(), size, 0, dx.raw(), shape[axis], offset, size, outer,
                                    inner, sizeof(float), stream);
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
  std::optional<std::vector<int64_t>> split_input_;
};

struct ConcatState final : ops::KernelState {
  size_t axis = 0;
  std::vector<int64_t> sizes;
};

class CudaConcatKernel final : public ops::OpKernel {
 public:
  explicit CudaConcatKernel(const ops::NodeInfo& node)
      : OpKernel(node), axis_(ops::ParseConcatAxis(node)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    ops::ConcatLayout layout = ops::ResolveConcat(ctx, axis_, node);
    const Tensor& first = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, first);
    const size_t element_size = detail::RequireMovableElements(node, first, "the inputs");
    auto state = std::make_unique<ConcatState>();
    state->axis = layout.axis;
    state->sizes = layout.sizes;
    if (ctx.num_inputs() == 1) {
      ctx.set_output(0, first);
    } else {
      const Shape& shape = layout.shape;
      const size_t axis = layout.axis;
      const int64_t outer = ops::DimProduct(shape, 0, axis);
      const int64_t inner = ops::DimProduct(shape, axis + 1, shape.size());
      Tensor y(first.dtype(), shape, first.device());
      int64_t offset = 0;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        detail::StreamOf(node, ctx.input(i));
        const int64_t size = layout.sizes[i];
        detail::LaunchCopyAxisRange(ctx.input(i).raw(), size, 0, y.raw(), shape[axis], offset, size,
                                    outer, inner, element_size, stream);
        offset += size;
      }
      ctx.set_output(0, std::move(y));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const auto* state = &ops::SavedState<ConcatState>(ctx);
    const Shape& shape = dy->shape();
    const int64_t outer = ops::DimProduct(shape, 0, state->axis);
    const int64_t inner = ops::DimProduct(shape, state->axis + 1, shape.size());
    int64_t offset = 0;
    for (size_t i = 0; i < state->sizes.size(); ++i) {
      const int64_t size = state->sizes[i];
      if (ctx.needs_grad(i)) {
        Shape input_shape = shape;
        input_shape[state->axis] = size;
        Tensor dx(DType::kFloat32, input_shape, dy->device());
        detail::LaunchCopyAxisRange(dy->raw(), shape[state->axis], offset, dx.raw(), size, 0, size,
                                    outer, inner, sizeof(float), stream);
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

AUTODIST_REGISTER_DEVICE_KERNEL(Concat, 4, 17, CudaConcatKernel, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Constant, 1, 17, CudaConstantKernel, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Reshape, 5, 17, CudaReshapeKernel, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(Split, 2, 17, CudaSplitKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
