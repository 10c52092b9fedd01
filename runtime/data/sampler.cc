#include "runtime/data/sampler.h"

#include <numeric>

#include "runtime/common/error.h"
#include "runtime/data/shuffle.h"

namespace autodist::data {

std::vector<int64_t> EpochOrder(int64_t n, int64_t epoch, bool shuffle, uint64_t seed) {
  if (shuffle) return Permutation(n, seed + static_cast<uint64_t>(epoch));
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

int64_t ShardSize(int64_t n, int world_size, bool drop_last) {
  AD_CHECK(world_size >= 1 && n >= 0, kInternal, "shard of {} rows over {} ranks", n, world_size);
  return drop_last ? n / world_size : (n + world_size - 1) / world_size;
}

std::vector<int64_t> Shard(const std::vector<int64_t>& order, int rank, int world_size,
                           bool drop_last) {
  AD_CHECK(rank >= 0 && rank < world_size, kInternal, "rank {} of world size {}", rank, world_size);
  const auto n = static_cast<int64_t>(order.size());
  const int64_t size = ShardSize(n, world_size, drop_last);
  std::vector<int64_t> shard(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    // Position in the padded (or cut) order; padding repeats the order from its start.
    const int64_t position = rank + i * world_size;
    shard[static_cast<size_t>(i)] = order[static_cast<size_t>(position % n)];
  }
  return shard;
}

}  // namespace autodist::data
