// PSLoadBalancing: each variable, in order, goes to the parameter server with the fewest bytes.
#include "runtime/strategy/builders.h"
#include "runtime/strategy/ps_load_balancer.h"

namespace autodist::strategy {
namespace {

class PsLoadBalancingBuilder final : public StrategyBuilder {
 public:
  explicit PsLoadBalancingBuilder(PsOptions options) : options_(options) {}

  autodist::proto::Strategy Build(const BuildInput& input) const override {
    PsLoadBalancer balancer(input.resources.PsCandidates(), input.colocation, input.variables);
    autodist::proto::Strategy strategy;
    SetReplicas(input.resources, strategy);
    for (const graph::Variable& variable : input.variables) {
      const size_t device = balancer.PlaceWhole(variable, EveryMemberCounts);
      auto* node = strategy.add_node_config();
      node->set_var_name(variable.name);
      SetPsSynchronizer(balancer.device(device), options_, *node->mutable_pssynchronizer());
    }
    return strategy;
  }

  bool UsesParameterServers() const override { return true; }

 private:
  PsOptions options_;
};

}  // namespace

std::unique_ptr<StrategyBuilder> MakePsLoadBalancingBuilder(OptionReader& reader) {
  return std::make_unique<PsLoadBalancingBuilder>(ReadPsOptions(reader));
}

}  // namespace autodist::strategy
