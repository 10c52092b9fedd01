// MatMul's operands (numpy semantics) resolved for the kernels of every backend: a 1-D first
// operand is a row [1, K], a 1-D second a column [K, 1], the added axis removed from the result;
// axes before the last two are batch axes, broadcast against each other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace autodist::ops {

using tensor::Shape;

// The operands of one MatMul seen as batches of row-major matrices: a is [.., M, K], b is
// [.., K, N], the result [batch.., M, N] before 1-D axes are dropped.
struct MatMulShape {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  Shape batch;                     // broadcast batch shape
  std::vector<int64_t> a_offsets;  // per batch entry: offset of its a matrix, in elements
  std::vector<int64_t> b_offsets;
  bool a_broadcast = false;  // some a matrix serves several batch entries
  bool b_broadcast = false;
  // b is one matrix read by every entry, so a's matrices and the result's are consecutive rows
  // of single [E * M, K] and [E * M, N] matrices.
  bool b_single = false;
  Shape out_shape;

  int64_t entries() const { return static_cast<int64_t>(a_offsets.size()); }
  // Whether entry i reads a's and b's i-th matrices: no broadcast on either side, so the entries
  // are one strided batch.
  bool one_to_one() const { return !a_broadcast && !b_broadcast; }
};

// Throws InvalidArgument naming `describe` for rank-0 operands, inner dimensions that differ, or
// batch axes that do not broadcast.
MatMulShape ResolveMatMul(const Shape& a, const Shape& b, const std::string& describe);

}  // namespace autodist::ops
