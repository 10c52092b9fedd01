// PS: every variable on the first parameter-server device.
#include "runtime/common/error.h"
#include "runtime/strategy/builders.h"

namespace autodist::strategy {
namespace {

class PsBuilder final : public StrategyBuilder {
 public:
  explicit PsBuilder(PsOptions options) : options_(options) {}

  autodist::proto::Strategy Build(const BuildInput& input) const override {
    const std::vector<std::string> candidates = input.resources.PsCandidates();
    AD_CHECK(!candidates.empty(), kInvalidArgument,
             "the resource spec has no parameter-server device (every node has role worker)");
    autodist::proto::Strategy strategy;
    SetReplicas(input.resources, strategy);
    for (const graph::Variable& variable : input.variables) {
      auto* node = strategy.add_node_config();
      node->set_var_name(variable.name);
      SetPsSynchronizer(candidates.front(), options_, *node->mutable_pssynchronizer());
    }
    return strategy;
  }

  bool UsesParameterServers() const override { return true; }

 private:
  PsOptions options_;
};

}  // namespace

std::unique_ptr<StrategyBuilder> MakePsBuilder(OptionReader& reader) {
  return std::make_unique<PsBuilder>(ReadPsOptions(reader));
}

}  // namespace autodist::strategy
