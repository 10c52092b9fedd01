// Which rows a rank reads in an epoch, with the semantics of PyTorch's DistributedSampler so that
// a job splits its data across replicas the way a PyTorch DDP job would.
#pragma once

#include <cstdint>
#include <vector>

namespace autodist::data {

// The order of the n rows in `epoch`: Permutation(n, seed + epoch) (wrapping) when shuffling,
// else 0..n-1. Every rank computes the same order.
std::vector<int64_t> EpochOrder(int64_t n, int64_t epoch, bool shuffle, uint64_t seed);

// Rows per rank (DistributedSampler.num_samples): ceil(n / world_size), or floor(n / world_size)
// with drop_last.
int64_t ShardSize(int64_t n, int world_size, bool drop_last);

// Rank `rank`'s share of `order` (DistributedSampler.__iter__): without drop_last the order is
// padded to ShardSize * world_size by repeating it from its start (as often as needed); with
// drop_last it is cut to that length. Rank r takes positions r, r + world_size, ...
std::vector<int64_t> Shard(const std::vector<int64_t>& order, int rank, int world_size,
                           bool drop_last);

}  // namespace autodist::data
