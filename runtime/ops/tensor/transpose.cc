// Transpose: output axis i is input axis perm[i] (default: the axes reversed). The gradient is
// the transpose by the inverse permutation. When only size-1 axes move, the output is a view.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

// Copies `x` with its axes permuted by the (validated) permutation `perm`.
Tensor Permute(const Tensor& x, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_strides = tensor::Strides(x.shape());
  Shape shape(perm.size());
  std::vector<int64_t> strides(perm.size());
  bool keeps_order = true;  // whether the axes of size > 1 keep their relative order
  int64_t last_moved = -1;
  for (size_t i = 0; i < perm.size(); ++i) {
    const auto axis = static_cast<size_t>(perm[i]);
    shape[i] = x.dim(axis);
    strides[i] = in_strides[axis];
    if (shape[i] != 1) {
      keeps_order = keeps_order && perm[i] > last_moved;
      last_moved = perm[i];
    }
  }
  if (keeps_order) return x.Reshaped(std::move(shape));
  Tensor y(x.dtype(), shape);
  CopyStrided(x.raw(), strides, y.raw(), tensor::Strides(shape), shape,
              tensor::ElementSize(x.dtype()));
  return y;
}

class TransposeKernel final : public OpKernel {
 public:
  explicit TransposeKernel(const NodeInfo& node)
      : OpKernel(node), has_perm_(node.HasAttribute("perm")), perm_(node.GetInts("perm", {})) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ctx.set_output(0, Permute(x, Permutation(x.rank(), ctx.Describe())));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::vector<int64_t> perm = Permutation(dy->rank(), ctx.Describe());
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    ctx.set_input_grad(0, Permute(*dy, inverse));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  // The permutation for an input of `rank`, checked: every axis exactly once.
  std::vector<int64_t> Permutation(size_t rank, const std::string& node) const {
    if (!has_perm_) {
      std::vector<int64_t> reversed(rank);
      for (size_t i = 0; i < rank; ++i) reversed[i] = static_cast<int64_t>(rank - 1 - i);
      return reversed;
    }
    AD_CHECK(perm_.size() == rank, kInvalidArgument,
             "{}: perm [{}] has {} entries but the input has rank {}", node, fmt::join(perm_, ", "),
             perm_.size(), rank);
    std::vector<bool> seen(rank, false);
    for (const int64_t axis : perm_) {
      AD_CHECK(axis >= 0 && axis < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(axis)],
               kInvalidArgument, "{}: perm [{}] is not a permutation of the {} axes", node,
               fmt::join(perm_, ", "), rank);
      seen[static_cast<size_t>(axis)] = true;
    }
    return perm_;
  }

  bool has_perm_;
  std::vector<int64_t> perm_;
};

AUTODIST_REGISTER_KERNEL(Transpose, 1, 17, TransposeKernel);

}  // namespace
}  // namespace autodist::ops
