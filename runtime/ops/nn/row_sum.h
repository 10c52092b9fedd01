// Sums over contiguous float rows for the normalization and pooling kernels: vectorized (float
// lanes within blocks of kRowSumBlock elements) and accurate (blocks are accumulated in double),
// so long rows neither run one add at a time nor drift.
#pragma once

#include <algorithm>
#include <cstdint>

namespace autodist::ops::nn {

inline constexpr int64_t kRowSumBlock = 1024;

// Sum over i in [0, n) of term(i), where term returns a float and is cheap and inlinable.
template <typename Term>
double RowSum(int64_t n, Term&& term) {
  // Independent lanes the compiler turns into vector adds (a plain `sum += x` may not be
  // reordered, so it would run one add at a time).
  constexpr int64_t kLanes = 8;
  double total = 0.0;
  for (int64_t begin = 0; begin < n; begin += kRowSumBlock) {
    const int64_t end = std::min(n, begin + kRowSumBlock);
    float lanes[kLanes] = {};
    int64_t i = begin;
    for (; i + kLanes <= end; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lanes[j] += term(i + j);
    }
    float block = 0.0F;
    for (; i < end; ++i) block += term(i);
    for (const float lane : lanes) block += lane;
    total += block;
  }
  return total;
}

}  // namespace autodist::ops::nn
