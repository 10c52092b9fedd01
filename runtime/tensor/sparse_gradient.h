// Row-sparse gradients (TensorFlow's IndexedSlices) and what is done with them. They live beside
// the tensor type, not with the op kernels, because every layer that moves or applies gradients
// (kernels, optimizers, parameter servers, the wire format) handles them.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace autodist::tensor {

// Rows `indices` of a [N, ...] variable. Indices are unique and ascending; duplicates were
// summed.
struct SparseGradient {
  Tensor indices;     // int64 [n]
  Tensor values;      // float32 [n, row dims...]
  Shape dense_shape;  // shape of the variable
};

// Builds a SparseGradient from possibly repeated row indices: rows with the same index are
// summed; the result's indices are unique and ascending. `values` is [n, row dims...].
// The positions of `indices` grouped by the row they name: rows ascending and unique, and for
// rows[u] the positions order[starts[u]] .. order[starts[u + 1] - 1], ascending (the order the
// rows appear). A row's occurrences summed in that order give the same bits on every backend.
struct RowGroups {
  std::vector<int64_t> rows;
  std::vector<int64_t> starts;  // rows.size() + 1 entries
  std::vector<int64_t> order;   // indices.size() entries
};
RowGroups GroupByRow(const std::vector<int64_t>& indices);

SparseGradient CoalesceRows(const std::vector<int64_t>& indices, const Tensor& values,
                            const Shape& dense_shape);

// Merges several sparse gradients of one variable into one coalesced gradient.
SparseGradient MergeSparse(const std::vector<const SparseGradient*>& parts);
SparseGradient MergeSparse(const std::vector<SparseGradient>& parts);

// Copies of rows `rows` (in that order) of a [N, ...] CPU tensor of any dtype: the rows a
// sparse gradient or a reply keeps. Each index must be within [0, N); the caller checked.
Tensor GatherRows(const Tensor& from, const std::vector<int64_t>& rows);

// The dense equivalent: zeros with the rows added in. On the CPU.
Tensor Densify(const SparseGradient& gradient);

// `gradient` with its indices and values on `device` (themselves where they are already).
SparseGradient SparseTo(const SparseGradient& gradient, const Device& device);

}  // namespace autodist::tensor
