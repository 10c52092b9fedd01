// Internal: the float32 arithmetic torch's CPU kernels do, and the loops that apply an
// element-wise update to a whole tensor or to the rows of a sparse gradient.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/ops/parallel.h"
#include "runtime/tensor/tensor.h"

namespace autodist::optim::detail {

// a * b + c rounded once, as torch's AVX2/AVX512 kernels compute `x.add_(y, alpha=a)` and
// `addcmul_` (vec::fmadd, and fused multiply-adds the compiler forms): checked against
// PyTorch 1.13 at development time. The product of two floats is exact in double, so this
// matches a hardware FMA except when the double sum lands exactly halfway between two floats
// (vanishingly rare), and needs no FMA instruction in our portable build.
inline float Fma(float a, float b, float c) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b) +
                            static_cast<double>(c));
}

// torch.maximum: NaN if either is NaN.
inline float Maximum(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return a + b;
  return a > b ? a : b;
}

// Calls fn.template operator()<b1, b2, ...>() with the runtime flags as template arguments, so
// that update loops are compiled once per option combination, free of branches, and vectorize.
template <bool... kFixed, typename Fn>
void DispatchFlags(Fn&& fn) {
  fn.template operator()<kFixed...>();
}
template <bool... kFixed, typename Fn, typename... Flags>
void DispatchFlags(Fn&& fn, bool flag, Flags... rest) {
  if (flag) {
    DispatchFlags<kFixed..., true>(fn, rest...);
  } else {
    DispatchFlags<kFixed..., false>(fn, rest...);
  }
}

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
