// The partitioner's tensor arithmetic: a shard is a contiguous range along one axis of a
// variable. The parameter servers hold shards; the workers' sessions hold whole variables, so
// every read through a partitioned variable (Gather on an embedding included) sees the whole
// value, and only the synchronizer cuts gradients into shards and writes pulled shards back.
#pragma once

#include <cstdint>

#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::sync {

// Elements [offset, offset + extent) along `axis` of a variable.
struct ShardRange {
  int axis = 0;
  int64_t offset = 0;
  int64_t extent = 0;

  // The range covering all of `shape` (an unpartitioned variable; axis 0, or a scalar).
  static ShardRange Whole(const tensor::Shape& shape);
  // The shard's shape within a variable of `shape`.
  tensor::Shape ShapeIn(const tensor::Shape& shape) const;
};

// A copy of `range` of `whole` (any dtype). Throws Internal when the range does not fit.
tensor::Tensor Slice(const tensor::Tensor& whole, const ShardRange& range);

// Copies `part` into `range` of `whole`. Throws InvalidArgument naming `what` when `part`'s dtype
// or shape does not match the range (a peer sent something else).
void WriteSlice(tensor::Tensor& whole, const tensor::Tensor& part, const ShardRange& range,
                const char* what);

// Copies rows into `range` of `whole` (a shard along axis 0, or the whole variable): row k of
// `rows.values` is row rows.indices[k] of the shard. What a parameter server sends back of a
// sparse shard when only some rows changed. Throws InvalidArgument naming `what` when the range
// is not along axis 0, or the rows' dtype, shape or indices do not fit it.
void WriteRows(tensor::Tensor& whole, const tensor::SparseGradient& rows, const ShardRange& range,
               const char* what);

// The rows of a row-sparse gradient that fall into `range`. Along axis 0 the rows whose index is
// in the range, re-based to the shard; along another axis every row, cut to the range. The
// result may have no rows; its dense_shape is the shard's.
tensor::SparseGradient SliceSparse(const tensor::SparseGradient& gradient, const ShardRange& range);

}  // namespace autodist::sync
