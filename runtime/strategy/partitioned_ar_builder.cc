// PartitionedAR: cut each variable along axis 0 (PartitionedPS's shard count) and all-reduce
// the shards, fusing every chunk_size consecutive shards into one group.
#include "runtime/strategy/builders.h"
#include "runtime/strategy/sharding.h"

namespace autodist::strategy {
namespace {

class PartitionedArBuilder final : public StrategyBuilder {
 public:
  explicit PartitionedArBuilder(int chunk_size) : chunk_size_(chunk_size) {}

  autodist::proto::Strategy Build(const BuildInput& input) const override {
    autodist::proto::Strategy strategy;
    SetReplicas(input.resources, strategy);
    int counter = 0;
    for (const graph::Variable& variable : input.variables) {
      const bool splittable = variable.partitionable && !variable.shape.empty();
      const int64_t shards = splittable ? SmallestDivisorShards(variable.shape[0]) : 1;
      counter = FillPartitionedAllReduce(variable, 0, shards, counter, Options(),
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
};

}  // namespace

std::unique_ptr<StrategyBuilder> MakePartitionedArBuilder(OptionReader& reader) {
  return std::make_unique<PartitionedArBuilder>(reader.Int("chunk_size", 128, 1));
}

}  // namespace autodist::strategy
