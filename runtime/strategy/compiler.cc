#include "runtime/strategy/compiler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <map>
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

}  // namespace

const std::vector<std::string>& BuilderNames() {
  static const auto* names = new std::vector<std::string>{
      "PS",        "PSLoadBalancing", "PartitionedPS",         "UnevenPartitionedPS",
      "AllReduce", "PartitionedAR",   "RandomAxisPartitionAR", "Parallax",
      "Auto"};
  return *names;
}

std::string ChooseAutoBuilder(const std::vector<graph::Variable>& variables,
                              const ResourceSpec& resources, std::string& reason) {
  if (resources.NumGpus() == 0) {
    reason = "Auto chose PSLoadBalancing: the resource spec has no GPUs";
    return "PSLoadBalancing";
  }
  size_t sparse = 0;
  for (const graph::Variable& variable : variables) sparse += variable.sparse ? 1 : 0;
  if (sparse > 0) {
    reason = fmt::format(
        "Auto chose Parallax: {} sparse variable(s) go to parameter servers, dense ones are "
        "all-reduced",
        sparse);
    return "Parallax";
  }
  reason = "Auto chose AllReduce: GPUs and only dense variables";
  return "AllReduce";
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
  BuilderOptions options = request.options;
  if (request.builder == "Auto") {
    AD_CHECK(options.empty(), kInvalidArgument,
             "builder Auto takes no options (got '{}'); name a builder to set its options",
             options.begin()->first);
    result.builder = ChooseAutoBuilder(variables, resources, result.reason);
    result.note = result.reason;
  }
  const auto factory = Factories().find(result.builder);
  if (factory == Factories().end()) {
    Fail(ErrorCode::kInvalidArgument, "unknown strategy builder '{}'; valid: {}", request.builder,
         fmt::join(BuilderNames(), ", "));
  }
  OptionReader reader(result.builder, options);
  const std::unique_ptr<StrategyBuilder> builder = factory->second(reader);
  reader.RejectUnread();

  ColocationGroups colocation = request.colocation;
  if (!colocation.empty() && !builder->UsesParameterServers()) {
    AD_CHECK(request.builder == "Auto", kInvalidArgument,
             "builder {} places no variable on a parameter server, so colocation groups do not "
             "apply; use PS, PSLoadBalancing, PartitionedPS, UnevenPartitionedPS or Parallax",
             result.builder);
    result.note += "; colocation groups ignored (no parameter servers)";
    colocation.clear();
  }

  result.strategy = builder->Build(BuildInput{variables, resources, colocation});
  result.strategy.set_id(ContentId(result.strategy));
  return result;
}

}  // namespace autodist::strategy
