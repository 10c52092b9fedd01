// spec.strategy: the builder and its options, colocation groups, replica-local state reduction.
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/job/builder_check.h"
#include "runtime/job/parse_sections.h"
#include "runtime/strategy/compiler.h"

namespace autodist::job::detail {
namespace {

strategy::ColocationGroups ReadColocation(ParseContext& context, const YAML::Node& node,
                                          const std::string& path) {
  if (!node.IsSequence()) {
    context.Fail(path, "expected a list of groups (lists of variable names), got {}",
                 Describe(node));
  }
  strategy::ColocationGroups groups;
  std::map<std::string, size_t> group_of;
  for (size_t g = 0; g < node.size(); ++g) {
    const YAML::Node group = node[g];
    const std::string group_path = IndexPath(path, g);
    context.Remember(group_path, group.Mark());
    if (!group.IsSequence() || group.size() == 0) {
      context.Fail(group_path, "expected a non-empty list of variable names, got {}",
                   Describe(group));
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < group.size(); ++i) {
      const std::string name_path = IndexPath(group_path, i);
      context.Remember(name_path, group[i].Mark());
      std::string name = ReadNonEmptyString(context, group[i], name_path);
      const auto [it, inserted] = group_of.emplace(name, g);
      if (!inserted) {
        context.Fail(name_path,
                     "variable '{}' is already in group {}; a variable can be in one group", name,
                     IndexPath(path, it->second));
      }
      names.push_back(std::move(name));
    }
    groups.push_back(std::move(names));
  }
  return groups;
}

std::map<std::string, StateReduction> ReadStateReduction(ParseContext& context,
                                                         const YAML::Node& node,
                                                         const std::string& path) {
  std::map<std::string, StateReduction> reductions;
  const MapReader map(context, node, path);
  for (const MapReader::Entry& entry : map.entries()) {
    if (entry.key.empty()) context.Fail(entry.path, "variable names must not be empty");
    const std::string value = ReadString(context, entry.value, entry.path);
    if (value == StateReductionName(StateReduction::kMean)) {
      reductions[entry.key] = StateReduction::kMean;
    } else if (value == StateReductionName(StateReduction::kSum)) {
      reductions[entry.key] = StateReduction::kSum;
    } else {
      context.Fail(entry.path, "expected one of: Mean, Sum; got \"{}\"", value);
    }
  }
  return reductions;
}

ProfileSpec ReadProfile(ParseContext& context, const YAML::Node& node, const std::string& path,
                        const PathResolver& resolver) {
  const MapReader map(context, node, path, {"path", "configMap"});
  const YAML::Node* file = map.Find("path");
  const YAML::Node* config_map = map.Find("configMap");
  if ((file == nullptr) == (config_map == nullptr)) {
    context.Fail(path, "give one of path (a file `autodist profile` wrote) or configMap");
  }
  ProfileSpec profile;
  if (file != nullptr) profile.path = ReadPath(context, *file, map.PathOf("path"), resolver);
  if (config_map != nullptr) {
    profile.config_map =
        ReadConfigMapRef(context, *config_map, map.PathOf("configMap"), "profile.json");
  }
  return profile;
}

}  // namespace

StrategySpec ReadStrategy(ParseContext& context, const YAML::Node& node, const std::string& path,
                          const PathResolver& resolver) {
  const MapReader map(
      context, node, path,
      {"builder", "options", "colocation", "stateReduction", "allowLossyCompression", "profile"});
  StrategySpec spec;
  if (const auto builder = map.String("builder")) {
    const auto& names = strategy::BuilderNames();
    if (std::find(names.begin(), names.end(), *builder) == names.end()) {
      context.Fail(map.PathOf("builder"), "expected one of: {}; got \"{}\"", fmt::join(names, ", "),
                   *builder);
    }
    spec.builder = *builder;
  }
  if (const YAML::Node* options = map.Find("options")) {
    const MapReader options_map(context, *options, map.PathOf("options"));
    for (const MapReader::Entry& entry : options_map.entries()) {
      spec.options[entry.key] = ReadString(context, entry.value, entry.path);
    }
  }
  // The builder's own option reader decides; its message names the option.
  const BuilderPlacement placement =
      context.Prefixing(map.Has("options") ? map.PathOf("options") : map.PathOf("builder"),
                        [&] { return CheckBuilderOptions(spec.builder, spec.options); });

  if (const YAML::Node* colocation = map.Find("colocation")) {
    spec.colocation = ReadColocation(context, *colocation, map.PathOf("colocation"));
    if (placement == BuilderPlacement::kAllReduce && !spec.colocation.empty()) {
      context.Fail(map.PathOf("colocation"),
                   "builder {} places no variable on a parameter server, so colocation groups do "
                   "not apply; use PS, PSLoadBalancing, PartitionedPS, UnevenPartitionedPS or "
                   "Parallax",
                   spec.builder);
    }
  }
  if (const YAML::Node* reductions = map.Find("stateReduction")) {
    spec.state_reduction = ReadStateReduction(context, *reductions, map.PathOf("stateReduction"));
  }
  spec.allow_lossy_compression = map.Bool("allowLossyCompression").value_or(false);
  if (const YAML::Node* profile = map.Find("profile")) {
    spec.profile = ReadProfile(context, *profile, map.PathOf("profile"), resolver);
  }
  if (spec.builder != "Auto") {
    for (const char* key : {"allowLossyCompression", "profile"}) {
      if (map.Has(key)) {
        context.Fail(map.PathOf(key),
                     "applies to builder Auto only (it chooses the strategy); builder {} is "
                     "named, so remove {}",
                     spec.builder, key);
      }
    }
  }
  return spec;
}

}  // namespace autodist::job::detail
