#include "runtime/ops/tensor/permutation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/common/error.h"

namespace autodist::ops {

Permutation::Permutation(const NodeInfo& node)
    : given_(node.HasAttribute("perm")), perm_(node.GetInts("perm", {})) {}

std::vector<int64_t> Permutation::For(size_t rank, const std::string& what) const {
  if (!given_) {
    std::vector<int64_t> reversed(rank);
    for (size_t i = 0; i < rank; ++i) reversed[i] = static_cast<int64_t>(rank - 1 - i);
    return reversed;
  }
  AD_CHECK(perm_.size() == rank, kInvalidArgument,
           "{}: perm [{}] has {} entries but the input has rank {}", what, fmt::join(perm_, ", "),
           perm_.size(), rank);
  std::vector<bool> seen(rank, false);
  for (const int64_t axis : perm_) {
    AD_CHECK(axis >= 0 && axis < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(axis)],
             kInvalidArgument, "{}: perm [{}] is not a permutation of the {} axes", what,
             fmt::join(perm_, ", "), rank);
    seen[static_cast<size_t>(axis)] = true;
  }
  return perm_;
}

std::vector<int64_t> InversePermutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  }
  return inverse;
}

PermutedLayout LayOutPermutation(const tensor::Shape& input, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_strides = tensor::Strides(input);
  PermutedLayout layout;
  layout.shape.resize(perm.size());
  layout.input_strides.resize(perm.size());
  bool keeps_order = true;  // whether the axes of size > 1 keep their relative order
  int64_t last_moved = -1;
  for (size_t i = 0; i < perm.size(); ++i) {
    const auto axis = static_cast<size_t>(perm[i]);
    layout.shape[i] = input[axis];
    layout.input_strides[i] = in_strides[axis];
    if (layout.shape[i] != 1) {
      keeps_order = keeps_order && perm[i] > last_moved;
      last_moved = perm[i];
    }
  }
  layout.view = keeps_order;
  return layout;
}

}  // namespace autodist::ops
