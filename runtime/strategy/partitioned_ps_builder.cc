// PartitionedPS and UnevenPartitionedPS: split each variable along axis 0 and spread the shards
// over the least-loaded parameter servers. They differ only in how many shards they cut.
#include "runtime/strategy/builders.h"
#include "runtime/strategy/ps_load_balancer.h"
#include "runtime/strategy/sharding.h"

namespace autodist::strategy {
namespace {

using ShardPolicy = int64_t (*)(int64_t dim0);

class PartitionedPsBuilder final : public StrategyBuilder {
 public:
  PartitionedPsBuilder(PsOptions options, ShardPolicy policy)
      : options_(options), policy_(policy) {}

  autodist::proto::Strategy Build(const BuildInput& input) const override {
    PsLoadBalancer balancer(input.resources.PsCandidates(), input.colocation, input.variables);
    autodist::proto::Strategy strategy;
    SetReplicas(input.resources, strategy);
    for (const graph::Variable& variable : input.variables) {
      auto* node = strategy.add_node_config();
      node->set_var_name(variable.name);

      // Scalars, variables read under control flow and colocated variables stay whole.
      const bool splittable = variable.partitionable && !variable.shape.empty() &&
                              !balancer.GroupOf(variable.name).has_value();
      const int64_t shards = splittable ? policy_(variable.shape[0]) : 1;
      if (shards == 1) {
        const size_t device = balancer.PlaceWhole(variable, EveryMemberCounts);
        SetPsSynchronizer(balancer.device(device), options_, *node->mutable_pssynchronizer());
        continue;
      }
      const std::vector<size_t> devices = balancer.LeastLoadedN(static_cast<size_t>(shards));
      for (const size_t device : devices) {
        balancer.AddLoad(device, static_cast<double>(variable.bytes) / static_cast<double>(shards));
      }
      node->set_partitioner(PartitionerString(variable.shape.size(), 0, shards));
      for (int64_t i = 0; i < shards; ++i) {
        auto* part = node->add_part_config();
        part->set_var_name(PartName(variable.name, i));
        SetPsSynchronizer(balancer.device(devices[static_cast<size_t>(i)]), options_,
                          *part->mutable_pssynchronizer());
      }
    }
    return strategy;
  }

  bool UsesParameterServers() const override { return true; }

 private:
  PsOptions options_;
  ShardPolicy policy_;
};

}  // namespace

std::unique_ptr<StrategyBuilder> MakePartitionedPsBuilder(OptionReader& reader) {
  return std::make_unique<PartitionedPsBuilder>(ReadPsOptions(reader), &SmallestDivisorShards);
}

std::unique_ptr<StrategyBuilder> MakeUnevenPartitionedPsBuilder(OptionReader& reader) {
  return std::make_unique<PartitionedPsBuilder>(ReadPsOptions(reader), &SmallestNonDivisorShards);
}

}  // namespace autodist::strategy
