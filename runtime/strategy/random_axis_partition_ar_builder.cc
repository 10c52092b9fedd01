// RandomAxisPartitionAR: cut each variable along a random axis among its dims > 1 (axis 0 for
// sparse variables) into the smallest divisor >= 2 of that dim, and all-reduce the shards.
//
// Reproducibility: the axis of the k-th variable that needs a draw is mt19937_64(seed)'s k-th
// output modulo the number of candidate axes. mt19937_64 is fully specified by the C++
// standard, so a seed gives the same strategy on every platform. Variables that cannot be cut
// (scalars, all dims <= 1, control flow) and sparse variables consume no draw.
#include <random>

#include "runtime/strategy/builders.h"
#include "runtime/strategy/sharding.h"

namespace autodist::strategy {
namespace {

class RandomAxisPartitionArBuilder final : public StrategyBuilder {
 public:
  RandomAxisPartitionArBuilder(int chunk_size, uint64_t seed)
      : chunk_size_(chunk_size), seed_(seed) {}

  autodist::proto::Strategy Build(const BuildInput& input) const override {
    autodist::proto::Strategy strategy;
    SetReplicas(input.resources, strategy);
    std::mt19937_64 random(seed_);
    int counter = 0;
    for (const graph::Variable& variable : input.variables) {
      std::vector<size_t> axes;  // dims > 1: the only ones worth cutting
      for (size_t axis = 0; axis < variable.shape.size(); ++axis) {
        if (variable.shape[axis] > 1) axes.push_back(axis);
      }
      size_t axis = 0;
      int64_t shards = 1;
      if (variable.partitionable && !axes.empty()) {
        axis = variable.sparse ? 0 : axes[random() % axes.size()];
        shards = SmallestDivisorShards(variable.shape[axis]);
      }
      counter = FillPartitionedAllReduce(variable, axis, shards, counter, Options(),
                                         *strategy.add_node_config());
    }
    return strategy;
  }

  bool UsesParameterServers() const override { return false; }

 private:
  // AutoDist's partitioned all-reduce builders use spec AUTO and no compression.
  AllReduceOptions Options() const {
    AllReduceOptions options;
    options.chunk_size = chunk_size_;
    options.spec = autodist::proto::AllReduceSynchronizer::AUTO;
    return options;
  }

  int chunk_size_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<StrategyBuilder> MakeRandomAxisPartitionArBuilder(OptionReader& reader) {
  const int chunk_size = reader.Int("chunk_size", 128, 1);
  const int64_t seed = reader.Int64("seed", 0);
  return std::make_unique<RandomAxisPartitionArBuilder>(chunk_size, static_cast<uint64_t>(seed));
}

}  // namespace autodist::strategy
