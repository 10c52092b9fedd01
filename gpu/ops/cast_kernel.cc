// Cast on CUDA (opsets 6..17): the CPU kernel's semantics (runtime/ops/tensor/cast.cc): the seven
// types it converts between, the input itself when it has the type already, and a gradient only
// between float types, the output gradient cast back to the input's type.
#include <memory>
#include <string>

#include "gpu/ops/cast.h"
#include "gpu/ops/kernel_util.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/cast_types.h"

namespace autodist::gpu {
namespace {

using tensor::DType;
using tensor::Tensor;

Tensor CastOnDevice(const Tensor& x, DType to, const std::string& node) {
  if (x.dtype() == to) return x;
  cudaStream_t stream = detail::StreamOf(node, x);
  // The CPU's check and message for a type Cast does not convert.
  for (const DType dtype : {x.dtype(), to}) ops::VisitCastType(dtype, node, [](auto /*type*/) {});
  Tensor y(to, x.shape(), x.device());
  const bool known = detail::LaunchCast(x.raw(), x.dtype(), y.raw(), to, x.numel(), stream);
  AD_CHECK(known, kInternal, "{}: no CUDA cast from {} to {}", node, tensor::DTypeName(x.dtype()),
           tensor::DTypeName(to));
  return y;
}

struct CudaCastState final : ops::KernelState {
  explicit CudaCastState(DType input) : input_dtype(input) {}
  DType input_dtype;
};

class CudaCastKernel final : public ops::OpKernel {
 public:
  explicit CudaCastKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        to_(ops::CastTarget(node.GetInt("to", 0), node.HasAttribute("to"), node.Describe())) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ctx.save_state(std::make_unique<CudaCastState>(x.dtype()));
    ctx.set_output(0, CastOnDevice(x, to_, description()));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const auto* state = &ops::SavedState<CudaCastState>(ctx);
    if (!ops::IsFloatType(state->input_dtype)) return;
    ctx.set_input_grad(0, CastOnDevice(*dy, state->input_dtype, description()));
  }

  bool IsDifferentiable(size_t /*input*/) const override { return ops::IsFloatType(to_); }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  DType to_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(Cast, 6, 17, CudaCastKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
