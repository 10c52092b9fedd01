#include "runtime/strategy/sharding.h"

#include <fmt/format.h>

#include <charconv>

#include "runtime/common/error.h"

namespace autodist::strategy {

int64_t SmallestDivisorShards(int64_t dim) {
  if (dim <= 1) return 1;
  for (int64_t i = 2; i * i <= dim; ++i) {
    if (dim % i == 0) return i;
  }
  return dim;  // prime (or 2): one shard per row
}

int64_t SmallestNonDivisorShards(int64_t dim) {
  if (dim <= 1) return 1;
  // The smallest non-divisor of any n > 2 is tiny (< 2 log n), so this loop is short.
  for (int64_t i = 2; i < dim; ++i) {
    if (dim % i != 0) return i;
  }
  return dim;
}

std::string PartitionerString(size_t rank, size_t axis, int64_t shards) {
  std::string out;
  for (size_t i = 0; i < rank; ++i) {
    if (i > 0) out += ',';
    out += i == axis ? std::to_string(shards) : "1";
  }
  return out;
}

std::vector<int64_t> ParsePartitioner(const std::string& partitioner,
                                      const std::vector<int64_t>& shape,
                                      const std::string& variable) {
  std::vector<int64_t> shards;
  size_t start = 0;
  while (start <= partitioner.size()) {
    const size_t end = std::min(partitioner.find(',', start), partitioner.size());
    int64_t value = 0;
    const char* first = partitioner.data() + start;
    const char* last = partitioner.data() + end;
    const auto [ptr, ec] = std::from_chars(first, last, value);
    AD_CHECK(ec == std::errc() && ptr == last && value >= 1, kInvalidArgument,
             "variable '{}': partitioner '{}' must be comma-separated positive integers", variable,
             partitioner);
    shards.push_back(value);
    start = end + 1;
  }
  AD_CHECK(shards.size() == shape.size(), kInvalidArgument,
           "variable '{}': partitioner '{}' has {} entries but the variable has rank {}", variable,
           partitioner, shards.size(), shape.size());
  int split_axes = 0;
  for (size_t axis = 0; axis < shards.size(); ++axis) {
    AD_CHECK(shards[axis] <= std::max<int64_t>(shape[axis], 1), kInvalidArgument,
             "variable '{}': partitioner '{}' cuts axis {} of size {} into {} shards", variable,
             partitioner, axis, shape[axis], shards[axis]);
    if (shards[axis] > 1) ++split_axes;
  }
  AD_CHECK(split_axes <= 1, kInvalidArgument,
           "variable '{}': partitioner '{}' splits more than one axis", variable, partitioner);
  return shards;
}

int64_t ShardExtent(int64_t dim, int64_t shards, int64_t index) {
  return dim / shards + (index < dim % shards ? 1 : 0);
}

std::string PartName(const std::string& variable, int64_t index) {
  return fmt::format("{}/part_{}:0", variable, index);
}

std::vector<int64_t> ShardShape(const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& shards_per_axis, int64_t index) {
  std::vector<int64_t> shard = shape;
  for (size_t axis = 0; axis < shard.size() && axis < shards_per_axis.size(); ++axis) {
    if (shards_per_axis[axis] > 1)
      shard[axis] = ShardExtent(shard[axis], shards_per_axis[axis], index);
  }
  return shard;
}

}  // namespace autodist::strategy
