// SoftmaxCrossEntropyLoss on CUDA (opsets 12..17), float32 scores [N, C, d1..dk], int64 labels
// [N, d1..dk], optional weights [C], reduction none | sum | mean, ignore_index, the optional
// log_prob output: the CPU kernel's semantics (runtime/ops/loss/softmax_cross_entropy.cc).
//
// The labels are checked on the host before the kernels run (a label outside [0, C) is an error
// naming the node and the position, as on the CPU), which copies them back from the device and
// waits for it: a cost of one small copy per step, paid for an error instead of a wrong loss.
#include <memory>

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

struct CrossEntropyState final : ops::KernelState {
  Tensor log_prob;     // [N, C, D] on the device
  Tensor denominator;  // [1] on the device: what a mean divided by (reductions only)
};

class CudaSoftmaxCrossEntropyKernel final : public ops::OpKernel {
 public:
  explicit CudaSoftmaxCrossEntropyKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        reduction_(ops::ParseReduction(node)),
        ignore_index_(ops::ParseIgnoreIndex(node)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& scores = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    cudaStream_t stream = detail::StreamOf(node, scores);
    detail::StreamOf(node, labels);
    detail::RequireFloat32(node, scores, "the scores");
    AD_CHECK(scores.rank() >= 2, kInvalidArgument, "{}: scores must be [N, C, ...], got {}", node,
             tensor::ShapeToString(scores.shape()));
    AD_CHECK(labels.dtype() == DType::kInt64, kInvalidArgument,
             "{}: labels must be int64 on cuda, got {}", node, tensor::DTypeName(labels.dtype()));
    Shape label_shape = scores.shape();
    label_shape.erase(label_shape.begin() + 1);
    AD_CHECK(labels.shape() == label_shape, kInvalidArgument,
             "{}: labels have shape {} but scores {} need {}", node,
             tensor::ShapeToString(labels.shape()), tensor::ShapeToString(scores.shape()),
             tensor::ShapeToString(label_shape));
    if (ctx.has_input(2)) {
      const Tensor& weights = ctx.input(2);
      detail::StreamOf(node, weights);
      detail::RequireFloat32(node, weights, "the weights");
      AD_CHECK(weights.shape() == Shape{scores.dim(1)}, kInvalidArgument,
               "{}: weights must have shape [{}]", node, scores.dim(1));
    }
    const detail::CrossEntropyShape shape =
        Shape3(scores, labels, ctx.has_input(2) ? &ctx.input(2) : nullptr);
    ops::CheckLabels(labels.To(tensor::Device::Cpu()).ToInt64Vector(node + ": labels"), shape.c,
                     ignore_index_, node, "label");

    auto state = std::make_unique<CrossEntropyState>();
    state->log_prob = Tensor(DType::kFloat32, scores.shape(), scores.device());
    detail::LaunchLogSoftmax(scores.device_data<float>(), state->log_prob.device_data<float>(),
                             shape, stream);
    const float* lp = state->log_prob.device_data<float>();
    if (reduction_ == Reduction::kNone) {
      Tensor losses(DType::kFloat32, label_shape, scores.device());
      detail::LaunchNll(lp, shape, false, false, losses.device_data<float>(), nullptr, stream);
      ctx.set_output(0, std::move(losses));
    } else {
      Tensor loss(DType::kFloat32, {}, scores.device());
      state->denominator = Tensor(DType::kFloat32, {1}, scores.device());
      detail::LaunchNll(lp, shape, true, reduction_ == Reduction::kMean, loss.device_data<float>(),
                        state->denominator.device_data<float>(), stream);
      ctx.set_output(0, std::move(loss));
    }
    if (ctx.num_outputs() > 1) ctx.set_output(1, state->log_prob);
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    if (!ctx.needs_grad(0)) return;
    const std::string& node = description();
    const auto* state = &ops::SavedState<CrossEntropyState>(ctx);
    const Tensor& scores = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, scores);
    const detail::CrossEntropyShape shape =
        Shape3(scores, ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr);
    const Tensor* dloss = ctx.output_grad(0);
    const Tensor* dlog_prob = ctx.output_grad(1);
    Tensor dx(DType::kFloat32, scores.shape(), scores.device());
    detail::LaunchCrossEntropyGrad(
        state->log_prob.device_data<float>(), shape,
        dloss == nullptr ? nullptr : dloss->device_data<float>(), reduction_ == Reduction::kNone,
        state->denominator.defined() ? state->denominator.device_data<float>() : nullptr,
        dlog_prob == nullptr ? nullptr : dlog_prob->device_data<float>(), dx.device_data<float>(),
        stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  detail::CrossEntropyShape Shape3(const Tensor& scores, const Tensor& labels,
                                   const Tensor* weights) const {
    detail::CrossEntropyShape shape;
    shape.n = scores.dim(0);
    shape.c = scores.dim(1);
    shape.d = shape.n * shape.c == 0 ? 0 : scores.numel() / (shape.n * shape.c);
    shape.labels = labels.device_data<int64_t>();
    shape.weights = weights == nullptr ? nullptr : weights->device_data<float>();
    shape.has_ignore_index = ignore_index_.has_value();
    shape.ignore_index = ignore_index_.value_or(0);
    return shape;
  }

  Reduction reduction_;
  std::optional<int64_t> ignore_index_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(SoftmaxCrossEntropyLoss, 12, 17, CudaSoftmaxCrossEntropyKernel,
                                kCuda);

}  // namespace
}  // namespace autodist::gpu
