#include "runtime/data/shuffle.h"

#include <numeric>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::data {

uint64_t UniformBelow(std::mt19937_64& engine, uint64_t bound) {
  AD_CHECK(bound >= 1, kInternal, "uniform draw below {}", bound);
  // 2^64 mod bound, computed in 64-bit arithmetic as (2^64 - bound) mod bound.
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    const uint64_t r = engine();
    if (r >= threshold) return r % bound;
  }
}

std::vector<int64_t> Permutation(int64_t n, uint64_t seed) {
  AD_CHECK(n >= 0, kInternal, "permutation of {} elements", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 engine(seed);
  for (int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(UniformBelow(engine, static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

}  // namespace autodist::data
