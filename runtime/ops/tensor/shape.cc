// Shape: the input's dimensions as a 1-D int64 tensor; from opset 15 only dims [start, end)
// (negative values count from the end, both clamped to [0, rank]). Not differentiable. On a GPU
// the output goes to the session's device, where the node's consumers read their inputs.
#include <algorithm>

#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

class ShapeKernel final : public OpKernel {
 public:
  explicit ShapeKernel(const NodeInfo& node)
      : OpKernel(node),
        start_(node.GetInt("start", 0)),
        has_end_(node.HasAttribute("end")),
        end_(node.GetInt("end", 0)),
        device_(node.device()) {}

  void Forward(ForwardContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    const auto rank = static_cast<int64_t>(shape.size());
    const auto clamp = [rank](int64_t i) {
      return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank);
    };
    const int64_t start = clamp(start_);
    const int64_t end = std::max(start, has_end_ ? clamp(end_) : rank);
    ctx.set_output(
        0, Tensor::FromVector<int64_t>(
               {end - start}, std::vector<int64_t>(shape.begin() + start, shape.begin() + end))
               .To(device_));
  }

  bool IsDifferentiable(size_t /*input*/) const override { return false; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  int64_t start_;
  bool has_end_;
  int64_t end_;
  tensor::Device device_;
};

// Opsets 1..14 have no start/end attributes; their defaults give the whole shape.
AUTODIST_REGISTER_KERNEL(Shape, 1, 17, ShapeKernel);
AUTODIST_REGISTER_DEVICE_KERNEL(Shape, 1, 17, ShapeKernel, kCuda);

}  // namespace
}  // namespace autodist::ops
