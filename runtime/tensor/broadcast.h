// ONNX multidirectional (numpy) broadcasting: shape rules, index iteration, and reducing a
// gradient back to the shape of a broadcast input.
#pragma once

#include <string>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace autodist::tensor {

// The broadcast shape of `a` and `b`; throws InvalidArgument naming `what` if incompatible.
Shape BroadcastShapes(const Shape& a, const Shape& b, const std::string& what);

// Element strides of `shape` when read as `out_shape` (0 on broadcast axes). `shape` is
// right-aligned against `out_shape`.
std::vector<int64_t> BroadcastStrides(const Shape& shape, const Shape& out_shape);

// Calls fn(out_index, a_index, b_index) for every element of `out_shape`, where a_index and
// b_index are the offsets of the broadcast operands. The innermost axis is a tight loop.
template <typename Fn>
void ForEachBroadcast(const Shape& out_shape, const std::vector<int64_t>& a_strides,
                      const std::vector<int64_t>& b_strides, Fn&& fn) {
  const int64_t total = NumElements(out_shape);
  if (total == 0) return;
  const size_t rank = out_shape.size();
  if (rank == 0) {
    fn(int64_t{0}, int64_t{0}, int64_t{0});
    return;
  }
  const int64_t inner = out_shape[rank - 1];
  const int64_t a_inner = a_strides[rank - 1];
  const int64_t b_inner = b_strides[rank - 1];
  std::vector<int64_t> counter(rank, 0);
  int64_t a_base = 0;
  int64_t b_base = 0;
  for (int64_t out = 0; out < total; out += inner) {
    for (int64_t i = 0; i < inner; ++i) fn(out + i, a_base + i * a_inner, b_base + i * b_inner);
    // Advance the outer counter (axes rank-2 .. 0), carrying like an odometer.
    for (size_t axis = rank - 1; axis-- > 0;) {
      ++counter[axis];
      a_base += a_strides[axis];
      b_base += b_strides[axis];
      if (counter[axis] < out_shape[axis]) break;
      a_base -= a_strides[axis] * out_shape[axis];
      b_base -= b_strides[axis] * out_shape[axis];
      counter[axis] = 0;
    }
  }
}

// Sums a float32 gradient of shape `grad.shape()` (a broadcast result) down to `target`, the
// shape of the operand that was broadcast. Returns `grad` itself when the shapes are equal.
Tensor ReduceToShape(const Tensor& grad, const Shape& target);

}  // namespace autodist::tensor
