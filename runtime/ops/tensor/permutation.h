// Transpose's permutation, for the kernels of every backend: checked against the input's rank
// (the axes reversed when the node gives none), inverted for the gradient, and laid out: the
// output's shape, the input's stride along each output axis, and whether only axes of size 1
// move (then the output is a view of the input).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ops/node_info.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops {

class Permutation {
 public:
  explicit Permutation(const NodeInfo& node);

  // The permutation for an input of `rank`; throws InvalidArgument naming `what` unless it
  // names every axis once.
  std::vector<int64_t> For(size_t rank, const std::string& what) const;

 private:
  bool given_;
  std::vector<int64_t> perm_;
};

std::vector<int64_t> InversePermutation(const std::vector<int64_t>& perm);

struct PermutedLayout {
  tensor::Shape shape;                 // the output's
  std::vector<int64_t> input_strides;  // the input's stride along each output axis
  bool view = false;                   // only axes of size 1 move
};

PermutedLayout LayOutPermutation(const tensor::Shape& input, const std::vector<int64_t>& perm);

}  // namespace autodist::ops
