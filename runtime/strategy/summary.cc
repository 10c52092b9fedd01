#include "runtime/strategy/summary.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <set>
#include <unordered_map>

#include "runtime/common/error.h"
#include "runtime/strategy/sharding.h"

namespace autodist::strategy {
namespace {

// Bytes of shard `index` of `variable` under `shards_per_axis`.
int64_t ShardBytes(const graph::Variable& variable, const std::vector<int64_t>& shards_per_axis,
                   int64_t index) {
  const int64_t elements = graph::NumElements(variable.shape);
  if (elements == 0) return 0;
  const int64_t element_size = variable.bytes / elements;
  return graph::NumElements(ShardShape(variable.shape, shards_per_axis, index)) * element_size;
}

}  // namespace

StrategySummary Summarize(const autodist::proto::Strategy& strategy,
                          const std::vector<graph::Variable>& variables,
                          const ResourceSpec& resources) {
  std::unordered_map<std::string, const graph::Variable*> by_name;
  for (const graph::Variable& variable : variables) by_name.emplace(variable.name, &variable);

  StrategySummary summary;
  summary.replicas = strategy.graph_config().replicas_size();
  std::map<std::string, int64_t> ps_bytes;
  std::set<int> groups;
  const auto count_unit = [&](const autodist::proto::Strategy::Node& unit, int64_t bytes) {
    ++summary.shards;
    if (unit.has_pssynchronizer()) {
      ++summary.ps_shards;
      ps_bytes[unit.pssynchronizer().reduction_destination()] += bytes;
    } else if (unit.has_allreducesynchronizer()) {
      ++summary.allreduce_shards;
      groups.insert(unit.allreducesynchronizer().group());
    }
  };

  for (const auto& node : strategy.node_config()) {
    const auto it = by_name.find(node.var_name());
    AD_CHECK(it != by_name.end(), kInvalidArgument,
             "strategy node '{}' names no variable of the model", node.var_name());
    const graph::Variable& variable = *it->second;
    ++summary.variables;
    if (node.partitioner().empty()) {
      count_unit(node, variable.bytes);
      continue;
    }
    ++summary.partitioned_variables;
    const std::vector<int64_t> shards =
        ParsePartitioner(node.partitioner(), variable.shape, variable.name);
    for (int i = 0; i < node.part_config_size(); ++i) {
      count_unit(node.part_config(i), ShardBytes(variable, shards, i));
    }
  }
  summary.allreduce_groups = static_cast<int>(groups.size());

  for (const std::string& device : resources.PsCandidates()) {
    const auto it = ps_bytes.find(device);
    summary.bytes_per_ps.emplace_back(device, it == ps_bytes.end() ? 0 : it->second);
    if (it != ps_bytes.end()) ps_bytes.erase(it);
  }
  for (const auto& [device, bytes] : ps_bytes) summary.bytes_per_ps.emplace_back(device, bytes);
  return summary;
}

std::string FormatBytes(int64_t bytes) {
  constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  auto value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string FormatSummary(const StrategySummary& summary, const std::string& builder) {
  std::string out;
  out += fmt::format("builder: {}\n", builder);
  out += fmt::format("replicas: {}\n", summary.replicas);
  out += fmt::format("variables: {} ({} partitioned, {} shards in all)\n", summary.variables,
                     summary.partitioned_variables, summary.shards);
  out += fmt::format("synchronized by parameter servers: {}\n", summary.ps_shards);
  out += fmt::format("synchronized by all-reduce: {} in {} group(s)\n", summary.allreduce_shards,
                     summary.allreduce_groups);
  if (summary.ps_shards > 0) {
    out += "bytes per parameter server:\n";
    for (const auto& [device, bytes] : summary.bytes_per_ps) {
      out += fmt::format("  {}: {} ({} bytes)\n", device, FormatBytes(bytes), bytes);
    }
  }
  return out;
}

}  // namespace autodist::strategy
