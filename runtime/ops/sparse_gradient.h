// Operations on row-sparse gradients (SparseGradient in kernel.h).
#pragma once

#include <vector>

#include "runtime/ops/kernel.h"

namespace autodist::ops {

// Builds a SparseGradient from possibly repeated row indices: rows with the same index are
// summed; the result's indices are unique and ascending. `values` is [n, row dims...].
SparseGradient CoalesceRows(const std::vector<int64_t>& indices, const Tensor& values,
                            const Shape& dense_shape);

// Merges several sparse gradients of one variable into one coalesced gradient.
SparseGradient MergeSparse(const std::vector<const SparseGradient*>& parts);
SparseGradient MergeSparse(const std::vector<SparseGradient>& parts);

// The dense equivalent: zeros with the rows added in.
Tensor Densify(const SparseGradient& gradient);

}  // namespace autodist::ops
