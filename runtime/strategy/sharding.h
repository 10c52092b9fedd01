// How the partitioning builders choose shard counts, and how a partitioned variable is cut.
// One place for these rules: the compiler, the summary and (later) the runtime partitioner agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autodist::strategy {

// AutoDist's PartitionedPS/PartitionedAR rule: the smallest divisor >= 2 of `dim`, or `dim`
// itself when there is none (primes, 2). Dims <= 1 give 1 (nothing to split).
int64_t SmallestDivisorShards(int64_t dim);

// AutoDist's UnevenPartitionedPS rule: the smallest i >= 2 that does not divide `dim`, or `dim`
// itself when there is none (dim <= 2). Dims <= 1 give 1.
int64_t SmallestNonDivisorShards(int64_t dim);

// Partitioner string "1,..,shards,..,1" with `shards` at `axis` of a rank-`rank` variable.
std::string PartitionerString(size_t rank, size_t axis, int64_t shards);

// Parses a partitioner string ("4,1") into shards per axis; throws InvalidArgument naming
// `variable` when it is malformed or does not match `shape` (rank, shards in 1..dim, one axis).
std::vector<int64_t> ParsePartitioner(const std::string& partitioner,
                                      const std::vector<int64_t>& shape,
                                      const std::string& variable);

// Size of shard `index` when `dim` is cut into `shards` pieces: the first dim % shards shards
// get one extra element (TensorFlow's fixed-size partitioner convention).
int64_t ShardExtent(int64_t dim, int64_t shards, int64_t index);

// Shape of shard `index` of a variable of `shape` cut as `shards_per_axis` says (ParsePartitioner).
std::vector<int64_t> ShardShape(const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& shards_per_axis, int64_t index);

// Name of partition `index` of `variable`: "<variable>/part_<index>:0" (AutoDist's naming).
std::string PartName(const std::string& variable, int64_t index);

}  // namespace autodist::strategy
