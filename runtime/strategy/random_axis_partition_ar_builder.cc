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
    std::mt19937_64 random(seed_);
    return BuildPartitionedAllReduce(
        input, chunk_size_, [&random](const graph::Variable& variable) {
          std::vector<size_t> axes;  // dims > 1: the only ones worth cutting
          for (size_t axis = 0; axis < variable.shape.size(); ++axis) {
            if (variable.shape[axis] > 1) axes.push_back(axis);
          }
          if (!variable.partitionable || axes.empty()) return Cut{};
          const size_t axis = variable.sparse ? 0 : axes[random() % axes.size()];
          return Cut{axis, SmallestDivisorShards(variable.shape[axis])};
        });
  }

  bool UsesParameterServers() const override { return false; }

 private:
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
