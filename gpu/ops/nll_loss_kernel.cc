// NegativeLogLikelihoodLoss on CUDA (opsets 12..17), float32 log-probabilities [N, C, d1..dk],
// targets [N, d1..dk] (int64 or int32), optional weights [C], reduction none | sum | mean,
// ignore_index: the CPU kernel's semantics (runtime/ops/loss/nll_loss.cc), on the kernels
// SoftmaxCrossEntropyLoss uses after its log-softmax (cross_entropy.cu). The targets are read and
// checked on the host (a target outside [0, C) is the CPU's error), then put on the GPU as int64.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/loss/reduction.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using ops::Reduction;
using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

struct CudaNllState final : ops::KernelState {
  Shape input_shape;   // Backward needs only the input's shape, not its values
  Tensor labels;       // int64 on the device
  Tensor denominator;  // [1] on the device: what a mean divided by (reductions only)
};

class CudaNllLossKernel final : public ops::OpKernel {
 public:
  explicit CudaNllLossKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        reduction_(ops::ParseReduction(node)),
        ignore_index_(ops::ParseIgnoreIndex(node)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& input = ctx.input(0);
    const Tensor& target = ctx.input(1);
    cudaStream_t stream = detail::StreamOf(node, input);
    detail::RequireFloat32(node, input, "the input");
    AD_CHECK(input.rank() >= 2, kInvalidArgument, "{}: input must be [N, C, ...], got {}", node,
             tensor::ShapeToString(input.shape()));
    Shape target_shape = input.shape();
    target_shape.erase(target_shape.begin() + 1);
    AD_CHECK(target.shape() == target_shape, kInvalidArgument,
             "{}: target has shape {} but input {} needs {}", node,
             tensor::ShapeToString(target.shape()), tensor::ShapeToString(input.shape()),
             tensor::ShapeToString(target_shape));
    if (ctx.has_input(2)) {
      const Tensor& weight = ctx.input(2);
      AD_CHECK(weight.dtype() == DType::kFloat32 && weight.shape() == Shape{input.dim(1)},
               kInvalidArgument, "{}: weight must be float32 [{}], got {} {}", node, input.dim(1),
               tensor::DTypeName(weight.dtype()), tensor::ShapeToString(weight.shape()));
      detail::StreamOf(node, weight);
    }
    const std::vector<int64_t> labels = target.ToInt64Vector(node + ": target");
    ops::CheckLabels(labels, input.dim(1), ignore_index_, node, "target");
    auto state = std::make_unique<CudaNllState>();
    state->input_shape = input.shape();
    state->labels = Tensor::FromVector<int64_t>(target_shape, labels).To(input.device());
    const detail::CrossEntropyShape shape = Shape3(input.shape(), state->labels, ctx);
    if (reduction_ == Reduction::kNone) {
      Tensor losses(DType::kFloat32, target_shape, input.device());
      detail::LaunchNll(input.device_data<float>(), shape, false, false,
                        losses.device_data<float>(), nullptr, stream);
      ctx.set_output(0, std::move(losses));
    } else {
      Tensor loss(DType::kFloat32, {}, input.device());
      state->denominator = Tensor(DType::kFloat32, {1}, input.device());
      detail::LaunchNll(input.device_data<float>(), shape, true, reduction_ == Reduction::kMean,
                        loss.device_data<float>(), state->denominator.device_data<float>(), stream);
      ctx.set_output(0, std::move(loss));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dloss = ctx.output_grad(0);
    if (dloss == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    const auto* state = &ops::SavedState<CudaNllState>(ctx);
    cudaStream_t stream = detail::StreamOf(node, *dloss);
    const detail::CrossEntropyShape shape = Shape3(state->input_shape, state->labels, ctx);
    Tensor dx(DType::kFloat32, state->input_shape, dloss->device());
    CheckCuda(cudaMemsetAsync(dx.raw(), 0, dx.nbytes(), stream), node + ": zeroing the gradient");
    detail::LaunchNllGrad(
        shape, dloss->device_data<float>(), reduction_ == Reduction::kNone,
        state->denominator.defined() ? state->denominator.device_data<float>() : nullptr,
        dx.device_data<float>(), stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  // The input's values are never read by Backward (its shape is in the state).
  bool BackwardNeedsInput(size_t input) const override { return input != 0; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  template <typename Context>
  detail::CrossEntropyShape Shape3(const Shape& input, const Tensor& labels,
                                   const Context& ctx) const {
    detail::CrossEntropyShape shape;
    shape.n = input[0];
    shape.c = input[1];
    // Per position, from the targets' count as the CPU takes it: with no classes (C = 0) every
    // target must be ignored, and each still gets its (zero) loss.
    shape.d = labels.numel() / std::max<int64_t>(shape.n, 1);
    shape.labels = labels.device_data<int64_t>();
    shape.weights = ctx.has_input(2) ? ctx.input(2).template device_data<float>() : nullptr;
    shape.has_ignore_index = ignore_index_.has_value();
    shape.ignore_index = ignore_index_.value_or(0);
    return shape;
  }

  Reduction reduction_;
  std::optional<int64_t> ignore_index_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(NegativeLogLikelihoodLoss, 12, 17, CudaNllLossKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
