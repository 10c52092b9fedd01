// Transpose: output axis i is input axis perm[i] (default: the axes reversed). The gradient is
// the transpose by the inverse permutation. When only size-1 axes move, the output is a view.
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"
#include "runtime/ops/tensor/permutation.h"

namespace autodist::ops {
namespace {

// Copies `x` with its axes permuted by the (validated) permutation `perm`.
Tensor Permute(const Tensor& x, const std::vector<int64_t>& perm) {
  PermutedLayout layout = LayOutPermutation(x.shape(), perm);
  if (layout.view) return x.Reshaped(std::move(layout.shape));
  Tensor y(x.dtype(), layout.shape);
  CopyStrided(x.raw(), layout.input_strides, y.raw(), tensor::Strides(layout.shape), layout.shape,
              tensor::ElementSize(x.dtype()));
  return y;
}

class TransposeKernel final : public OpKernel {
 public:
  explicit TransposeKernel(const NodeInfo& node) : OpKernel(node), permutation_(node) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ctx.set_output(0, Permute(x, permutation_.For(x.rank(), ctx.Describe())));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    ctx.set_input_grad(
        0, Permute(*dy, InversePermutation(permutation_.For(dy->rank(), ctx.Describe()))));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  Permutation permutation_;
};

AUTODIST_REGISTER_KERNEL(Transpose, 1, 17, TransposeKernel);

}  // namespace
}  // namespace autodist::ops
