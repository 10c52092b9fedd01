#include "runtime/strategy/compiler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_set>

#include "runtime/common/error.h"
#include "runtime/strategy/builders.h"

namespace autodist::strategy {
namespace {

using Factory = std::function<std::unique_ptr<StrategyBuilder>(OptionReader&)>;

const std::map<std::string, Factory>& Factories() {
  static const auto* factories = new std::map<std::string, Factory>{
      {"PS", &MakePsBuilder},
      {"PSLoadBalancing", &MakePsLoadBalancingBuilder},
      {"PartitionedPS", &MakePartitionedPsBuilder},
      {"UnevenPartitionedPS", &MakeUnevenPartitionedPsBuilder},
      {"AllReduce", &MakeAllReduceBuilder},
      {"PartitionedAR", &MakePartitionedArBuilder},
      {"RandomAxisPartitionAR", &MakeRandomAxisPartitionArBuilder},
      {"Parallax", &MakeParallaxBuilder},
  };
  return *factories;
}

void ValidateColocation(const ColocationGroups& groups,
                        const std::vector<graph::Variable>& variables) {
  std::unordered_set<std::string> names;
  for (const graph::Variable& variable : variables) names.insert(variable.name);
  std::map<std::string, size_t> seen;
  for (size_t group = 0; group < groups.size(); ++group) {
    AD_CHECK(!groups[group].empty(), kInvalidArgument, "colocation group {} is empty", group + 1);
    for (const std::string& name : groups[group]) {
      AD_CHECK(names.count(name) == 1, kInvalidArgument,
               "colocation group {} names '{}', which is not a trainable variable of the model",
               group + 1, name);
      const auto [it, inserted] = seen.emplace(name, group);
      AD_CHECK(inserted, kInvalidArgument,
               "variable '{}' is in colocation groups {} and {}; a variable can be in one group",
               name, it->second + 1, group + 1);
    }
  }
}

// FNV-1a over the serialized strategy: stable across runs and platforms.
std::string ContentId(const autodist::proto::Strategy& strategy) {
  std::string bytes;
  strategy.SerializeToString(&bytes);
  uint64_t hash = 14695981039346656037ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return fmt::format("strategy-{:016x}", hash);
}

std::unique_ptr<StrategyBuilder> MakeBuilder(const std::string& name,
                                             const BuilderOptions& options) {
  const auto factory = Factories().find(name);
  if (factory == Factories().end()) {
    Fail(ErrorCode::kInvalidArgument, "unknown strategy builder '{}'; valid: {}", name,
         fmt::join(BuilderNames(), ", "));
  }
  OptionReader reader(name, options);
  std::unique_ptr<StrategyBuilder> builder = factory->second(reader);
  reader.RejectUnread();
  return builder;
}

// Auto: every candidate compiled and predicted; the fastest is the strategy. Colocation groups
// bind the parameter-server candidates and are ignored by the others.
void CompileAuto(const std::vector<graph::Variable>& variables, const ResourceSpec& resources,
                 const CompileRequest& request, CompileResult& result) {
  result.auto_inputs = CostModelInputs(variables, resources, request);
  const AutoInputs& inputs = result.auto_inputs;
  result.ranking = RankCandidates(variables, resources, inputs, [&](const Candidate& candidate) {
    const std::unique_ptr<StrategyBuilder> builder =
        MakeBuilder(candidate.builder, candidate.options);
    const ColocationGroups none;
    return builder->Build(BuildInput{variables, resources,
                                     builder->UsesParameterServers() ? request.colocation : none});
  });
  const RankedCandidate& best = result.ranking.front();
  result.builder = best.candidate.builder;
  result.strategy = best.strategy;
  result.strategy.set_id(ContentId(result.strategy));
  result.predicted_step_seconds = best.prediction.total_seconds;
  result.reason = AutoReason(result.ranking);
  result.note = result.reason;
  if (!request.colocation.empty() &&
      !MakeBuilder(best.candidate.builder, best.candidate.options)->UsesParameterServers()) {
    result.note += "; colocation groups ignored (no parameter servers)";
  }
}

}  // namespace

AutoInputs CostModelInputs(const std::vector<graph::Variable>& variables,
                           const ResourceSpec& resources, const CompileRequest& request) {
  AutoInputs inputs;
  if (request.builder == "Auto") inputs.options = ReadAutoOptions(request.options);
  inputs.allow_lossy_compression = request.allow_lossy_compression;
  inputs.network = request.network;
  inputs.optimizer = request.optimizer;
  const std::vector<std::string> replicas = resources.Replicas();
  std::set<std::string> worker_nodes;
  for (const std::string& replica : replicas) {
    worker_nodes.insert(replica.substr(0, replica.find(':')));
  }
  const int replicas_per_worker =
      worker_nodes.empty() ? 1 : static_cast<int>(replicas.size() / worker_nodes.size());
  inputs.profile = request.profile.value_or(EstimateStepProfile(
      variables, request.batch_per_replica, replicas_per_worker, resources.NumGpus() > 0));
  return inputs;
}

const std::vector<std::string>& BuilderNames() {
  static const auto* names = new std::vector<std::string>{
      "PS",        "PSLoadBalancing", "PartitionedPS",         "UnevenPartitionedPS",
      "AllReduce", "PartitionedAR",   "RandomAxisPartitionAR", "Parallax",
      "Auto"};
  return *names;
}

CompileResult Compile(const std::vector<graph::Variable>& variables, const ResourceSpec& resources,
                      const CompileRequest& request) {
  AD_CHECK(!variables.empty(), kInvalidArgument,
           "the model has no trainable variables (float initializers): nothing to distribute");
  AD_CHECK(!resources.Replicas().empty(), kInvalidArgument,
           "the resource spec has no replica device (every node has role ps)");
  ValidateColocation(request.colocation, variables);

  CompileResult result;
  result.builder = request.builder;
  if (request.builder == "Auto") {
    CompileAuto(variables, resources, request, result);
    return result;
  }
  const std::unique_ptr<StrategyBuilder> builder = MakeBuilder(request.builder, request.options);
  AD_CHECK(request.colocation.empty() || builder->UsesParameterServers(), kInvalidArgument,
           "builder {} places no variable on a parameter server, so colocation groups do not "
           "apply; use PS, PSLoadBalancing, PartitionedPS, UnevenPartitionedPS or Parallax",
           result.builder);
  result.strategy = builder->Build(BuildInput{variables, resources, request.colocation});
  result.strategy.set_id(ContentId(result.strategy));
  return result;
}

}  // namespace autodist::strategy
