// Parallax: dense variables are all-reduced (group = overall variable index / chunk_size, NCCL,
// no compression); sparse variables go to the least-loaded parameter server. As in AutoDist, the
// sparse variables never get a local proxy (local_proxy_variable is accepted but has no effect):
// they are large and each replica reads only a few rows.
#include "runtime/strategy/builders.h"
#include "runtime/strategy/ps_load_balancer.h"

namespace autodist::strategy {
namespace {

class ParallaxBuilder final : public StrategyBuilder {
 public:
  ParallaxBuilder(int chunk_size, PsOptions options) : chunk_size_(chunk_size), options_(options) {
    options_.local_proxy_variable = false;
  }

  autodist::proto::Strategy Build(const BuildInput& input) const override {
    autodist::proto::Strategy strategy;
    SetReplicas(input.resources, strategy);
    bool any_sparse = false;
    for (const graph::Variable& variable : input.variables) any_sparse |= variable.sparse;
    std::optional<PsLoadBalancer> balancer;
    if (any_sparse)
      balancer.emplace(input.resources.PsCandidates(), input.colocation, input.variables);

    FusionGroups groups(chunk_size_);  // counts every variable, sparse ones too, as AutoDist does
    for (const graph::Variable& variable : input.variables) {
      auto* node = strategy.add_node_config();
      node->set_var_name(variable.name);
      const int group = groups.Next();
      if (!variable.sparse) {
        AllReduceOptions dense;  // NCCL, no compression
        dense.chunk_size = chunk_size_;
        SetAllReduceSynchronizer(dense, group, *node->mutable_allreducesynchronizer());
      } else {
        // Only a group's sparse members live on the server; dense ones are all-reduced.
        const size_t device = balancer->PlaceWhole(
            variable, [](const graph::Variable& member) { return member.sparse; });
        SetPsSynchronizer(balancer->device(device), options_, *node->mutable_pssynchronizer());
      }
    }
    return strategy;
  }

  bool UsesParameterServers() const override { return true; }

 private:
  int chunk_size_;
  PsOptions options_;
};

}  // namespace

std::unique_ptr<StrategyBuilder> MakeParallaxBuilder(OptionReader& reader) {
  const int chunk_size = reader.Int("chunk_size", 128, 1);
  return std::make_unique<ParallaxBuilder>(chunk_size, ReadPsOptions(reader));
}

}  // namespace autodist::strategy
