// AllReduce: every variable all-reduced; variable i joins fusion group i / chunk_size.
#include "runtime/strategy/builders.h"

namespace autodist::strategy {
namespace {

class AllReduceBuilder final : public StrategyBuilder {
 public:
  explicit AllReduceBuilder(AllReduceOptions options) : options_(options) {}

  autodist::proto::Strategy Build(const BuildInput& input) const override {
    autodist::proto::Strategy strategy;
    SetReplicas(input.resources, strategy);
    FusionGroups groups(options_.chunk_size);
    for (const graph::Variable& variable : input.variables) {
      auto* node = strategy.add_node_config();
      node->set_var_name(variable.name);
      SetAllReduceSynchronizer(options_, groups.Next(), *node->mutable_allreducesynchronizer());
    }
    return strategy;
  }

  bool UsesParameterServers() const override { return false; }

 private:
  AllReduceOptions options_;
};

}  // namespace

std::unique_ptr<StrategyBuilder> MakeAllReduceBuilder(OptionReader& reader) {
  return std::make_unique<AllReduceBuilder>(
      ReadAllReduceOptions(reader, autodist::proto::AllReduceSynchronizer::NCCL, true));
}

}  // namespace autodist::strategy
