// Transpose on CUDA (opsets 1..17): the CPU kernel's semantics (runtime/ops/tensor/transpose.cc,
// permutation.h): a view when only axes of size 1 move, else a strided copy; the gradient is the
// transpose by the inverse permutation. Elements of 4 or 8 bytes (float32, int32, int64,
// float64).
#include <fmt/format.h>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/permutation.h"

namespace autodist::gpu {
namespace {

using tensor::Tensor;

Tensor Permute(const Tensor& x, const std::vector<int64_t>& perm, const std::string& node) {
  cudaStream_t stream = detail::StreamOf(node, x);
  const size_t element_size = detail::RequireMovableElements(node, x, "the input");
  ops::PermutedLayout layout = ops::LayOutPermutation(x.shape(), perm);
  if (layout.view) return x.Reshaped(std::move(layout.shape));
  AD_CHECK(layout.shape.size() <= static_cast<size_t>(detail::kMaxRank), kInvalidArgument,
           "{}: inputs of rank {} are more than the {} axes a CUDA transpose takes", node,
           layout.shape.size(), detail::kMaxRank);
  detail::StridedCopyPlan plan;
  plan.rank = static_cast<int>(layout.shape.size());
  plan.n = tensor::NumElements(layout.shape);
  for (int axis = 0; axis < plan.rank; ++axis) {
    plan.dims[axis] = layout.shape[static_cast<size_t>(axis)];
    plan.in_strides[axis] = layout.input_strides[static_cast<size_t>(axis)];
  }
  Tensor y(x.dtype(), layout.shape, x.device());
  detail::LaunchStridedCopy(x.raw(), y.raw(), element_size, plan, stream);
  return y;
}

class CudaTransposeKernel final : public ops::OpKernel {
 public:
  explicit CudaTransposeKernel(const ops::NodeInfo& node) : OpKernel(node), permutation_(node) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    ctx.set_output(0, Permute(x, permutation_.For(x.rank(), node), node));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    ctx.set_input_grad(
        0, Permute(*dy, ops::InversePermutation(permutation_.For(dy->rank(), node)), node));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  ops::Permutation permutation_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(Transpose, 1, 17, CudaTransposeKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
