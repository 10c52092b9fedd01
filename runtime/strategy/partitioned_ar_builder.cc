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
    return BuildPartitionedAllReduce(input, chunk_size_, [](const graph::Variable& variable) {
      const bool splittable = variable.partitionable && !variable.shape.empty();
      return Cut{0, splittable ? SmallestDivisorShards(variable.shape[0]) : 1};
    });
  }

  bool UsesParameterServers() const override { return false; }

 private:
  int chunk_size_;
};

}  // namespace

std::unique_ptr<StrategyBuilder> MakePartitionedArBuilder(OptionReader& reader) {
  return std::make_unique<PartitionedArBuilder>(reader.Int("chunk_size", 128, 1));
}

}  // namespace autodist::strategy
