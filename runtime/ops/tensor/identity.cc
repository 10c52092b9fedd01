// Identity: the output is the input tensor itself (shared storage, no copy), and so is the
// gradient; a sparse gradient passes through unchanged (PassesGradientThrough).
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

class IdentityKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override { ctx.set_output(0, ctx.input(0)); }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    ctx.set_input_grad(0, *dy);
  }

  bool PassesGradientThrough() const override { return true; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
};

AUTODIST_REGISTER_KERNEL(Identity, 1, 17, IdentityKernel);
// A view works on any device's tensors: the same kernel serves the CUDA backend.
AUTODIST_REGISTER_DEVICE_KERNEL(Identity, 1, 17, IdentityKernel, kCuda);

}  // namespace
}  // namespace autodist::ops
