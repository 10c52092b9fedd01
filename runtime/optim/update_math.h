// Internal: the CPU loops that apply an element-wise update to a whole tensor or to the rows of a
// sparse gradient. The per-element arithmetic is in rules/element_math.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/ops/parallel.h"
#include "runtime/tensor/tensor.h"

namespace autodist::optim::detail {

// Element-wise updates are independent per element, so splitting the work changes no result.
inline constexpr int64_t kGrainElements = int64_t{1} << 15;

// Calls update(offset, count) over [0, numel) in parallel chunks.
template <typename Update>
void ForAllElements(int64_t numel, Update&& update) {
  ops::ParallelFor(numel, kGrainElements,
                   [&](int64_t begin, int64_t end) { update(begin, end - begin); });
}

// Elements per row of a variable of rank >= 1 (0 for a table without rows).
inline int64_t RowSize(const tensor::Tensor& param) {
  return param.dim(0) == 0 ? 0 : param.numel() / param.dim(0);
}

// Calls update(param_offset, grad_offset, row_size) for each present row: row `rows[i]` of the
// variable and row i of the sparse gradient's values.
template <typename Update>
void ForPresentRows(const std::vector<int64_t>& rows, int64_t row_size, Update&& update) {
  const auto n = static_cast<int64_t>(rows.size());
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, row_size));
  ops::ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      update(rows[static_cast<size_t>(i)] * row_size, i * row_size, row_size);
    }
  });
}

}  // namespace autodist::optim::detail
