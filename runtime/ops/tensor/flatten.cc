// Flatten: [d0..dn] -> [d0*..*d(axis-1), d(axis)*..*dn], a zero-copy view.
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

class FlattenKernel final : public OpKernel {
 public:
  explicit FlattenKernel(const NodeInfo& node) : OpKernel(node), axis_(node.GetInt("axis", 1)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    AD_CHECK(axis >= 0 && axis <= rank, kInvalidArgument, "{}: axis {} is out of range for rank {}",
             ctx.Describe(), axis_, rank);
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.dim(static_cast<size_t>(i));
    const int64_t inner = outer == 0 ? 0 : x.numel() / outer;
    ctx.set_output(0, x.Reshaped({outer, inner}));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    ctx.set_input_grad(0, dy->Reshaped(ctx.input(0).shape()));
  }

  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  int64_t axis_;
};

AUTODIST_REGISTER_KERNEL(Flatten, 1, 17, FlattenKernel);
// A view works on any device's tensors: the same kernel serves the CUDA backend.
AUTODIST_REGISTER_DEVICE_KERNEL(Flatten, 1, 17, FlattenKernel, kCuda);

}  // namespace
}  // namespace autodist::ops
