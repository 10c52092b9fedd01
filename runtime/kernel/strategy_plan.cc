#include "runtime/kernel/strategy_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "runtime/common/error.h"
#include "runtime/strategy/sharding.h"

namespace autodist::kernel {
namespace {

using autodist::proto::PSSynchronizer;
using autodist::proto::Strategy;

const PSSynchronizer& RequirePs(const Strategy::Node& node, const std::string& what) {
  AD_CHECK(node.synchronizer_case() != Strategy::Node::SYNCHRONIZER_NOT_SET, kInvalidArgument,
           "strategy: {} has no synchronizer", what);
  AD_CHECK(node.has_pssynchronizer(), kInvalidArgument,
           "strategy: {} uses an AllReduceSynchronizer; this runtime runs parameter-server "
           "strategies (builders PS, PSLoadBalancing, PartitionedPS, UnevenPartitionedPS)",
           what);
  return node.pssynchronizer();
}

// The node hosting a PS device, checked against the resource spec.
std::string PsNode(const PSSynchronizer& ps, const std::map<std::string, strategy::NodeRole>& roles,
                   const std::string& what) {
  const std::string node = NodeOfDevice(ps.reduction_destination(), what);
  const auto it = roles.find(node);
  AD_CHECK(it != roles.end(), kInvalidArgument,
           "strategy: {} is placed on '{}', which is not a device of any node of the job", what,
           ps.reduction_destination());
  AD_CHECK(it->second != strategy::NodeRole::kWorker, kInvalidArgument,
           "strategy: {} is placed on '{}', but node '{}' has role worker and hosts no parameter "
           "server",
           what, ps.reduction_destination(), node);
  AD_CHECK(ps.staleness() >= 0, kInvalidArgument, "strategy: {} has negative staleness {}", what,
           ps.staleness());
  return node;
}

ShardPlan MakeShard(std::string name, const graph::Variable& variable, ShardRange range,
                    const PSSynchronizer& ps, std::string node) {
  const tensor::Shape& shape = variable.shape;
  ShardPlan shard;
  shard.name = std::move(name);
  shard.variable = variable.name;
  shard.range = range;
  shard.shape = range.ShapeIn(shape);
  shard.ps_node = std::move(node);
  shard.sync = ps.sync();
  shard.staleness = ps.sync() ? ps.staleness() : 0;
  shard.local_replication = ps.local_replication();
  return shard;
}

// The one axis a partitioner string cuts (the others are 1), and its shard count.
std::pair<int, int64_t> CutAxis(const std::vector<int64_t>& shards) {
  for (size_t axis = 0; axis < shards.size(); ++axis) {
    if (shards[axis] > 1) return {static_cast<int>(axis), shards[axis]};
  }
  return {0, 1};
}

}  // namespace

std::string NodeOfDevice(const std::string& device, const std::string& what) {
  const size_t last = device.rfind(':');
  const size_t type =
      last == std::string::npos || last == 0 ? std::string::npos : device.rfind(':', last - 1);
  const bool ok = type != std::string::npos && type > 0 && last + 1 < device.size() &&
                  (device.compare(type + 1, last - type - 1, "CPU") == 0 ||
                   device.compare(type + 1, last - type - 1, "GPU") == 0) &&
                  std::all_of(device.begin() + static_cast<std::ptrdiff_t>(last + 1), device.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
  AD_CHECK(ok, kInvalidArgument,
           "{}: expected a device '<address>:CPU:<index>' or '<address>:GPU:<index>', got '{}'",
           what, device);
  return device.substr(0, type);
}

std::vector<const ShardPlan*> StrategyPlan::HostedBy(const std::string& node) const {
  std::vector<const ShardPlan*> hosted;
  for (const VariablePlan& variable : variables) {
    for (const ShardPlan& shard : variable.shards) {
      if (shard.ps_node == node) hosted.push_back(&shard);
    }
  }
  return hosted;
}

const VariablePlan& StrategyPlan::Variable(const std::string& name) const {
  const auto it = index.find(name);
  AD_CHECK(it != index.end(), kInternal, "the strategy plan has no variable '{}'", name);
  return variables[it->second];
}

StrategyPlan PlanStrategy(const Strategy& strategy, const std::vector<graph::Variable>& variables,
                          const strategy::ResourceSpec& resources) {
  std::map<std::string, strategy::NodeRole> roles;
  for (const strategy::NodeSpec& node : resources.nodes()) roles[node.address] = node.role;
  std::map<std::string, const Strategy::Node*> configs;
  for (const Strategy::Node& node : strategy.node_config()) {
    AD_CHECK(configs.emplace(node.var_name(), &node).second, kInvalidArgument,
             "strategy: variable '{}' has more than one node_config", node.var_name());
  }
  std::set<std::string> known;
  StrategyPlan plan;
  std::set<std::string> ps_nodes;
  for (const graph::Variable& variable : variables) {
    if (!variable.trainable) continue;
    known.insert(variable.name);
    const auto it = configs.find(variable.name);
    AD_CHECK(it != configs.end(), kInvalidArgument,
             "strategy: the model's variable '{}' has no node_config; was the strategy compiled "
             "for another model?",
             variable.name);
    const Strategy::Node& config = *it->second;
    const std::string what = fmt::format("variable '{}'", variable.name);
    VariablePlan out;
    out.name = variable.name;
    out.shape = variable.shape;
    out.sparse = variable.sparse;
    if (config.partitioner().empty()) {
      AD_CHECK(config.part_config().empty(), kInvalidArgument,
               "strategy: {} has part_config but no partitioner", what);
      const PSSynchronizer& ps = RequirePs(config, what);
      out.shards.push_back(MakeShard(variable.name, variable, ShardRange::Whole(variable.shape), ps,
                                     PsNode(ps, roles, what)));
    } else {
      const auto [axis, count] =
          CutAxis(strategy::ParsePartitioner(config.partitioner(), variable.shape, variable.name));
      AD_CHECK(config.part_config_size() == count, kInvalidArgument,
               "strategy: {} is cut into {} shards by partitioner '{}' but has {} part_config "
               "entries",
               what, count, config.partitioner(), config.part_config_size());
      int64_t offset = 0;
      const int64_t dim = variable.shape[static_cast<size_t>(axis)];
      for (int64_t i = 0; i < count; ++i) {
        const Strategy::Node& part = config.part_config(static_cast<int>(i));
        const std::string name = strategy::PartName(variable.name, i);
        AD_CHECK(part.var_name() == name, kInvalidArgument,
                 "strategy: part {} of {} is named '{}', expected '{}'", i, what, part.var_name(),
                 name);
        const std::string part_what = fmt::format("shard '{}'", name);
        const PSSynchronizer& ps = RequirePs(part, part_what);
        const ShardRange range{axis, offset, strategy::ShardExtent(dim, count, i)};
        out.shards.push_back(MakeShard(name, variable, range, ps, PsNode(ps, roles, part_what)));
        offset += range.extent;
      }
      out.partitioned = count > 1;
    }
    for (const ShardPlan& shard : out.shards) ps_nodes.insert(shard.ps_node);
    plan.index[out.name] = plan.variables.size();
    plan.variables.push_back(std::move(out));
  }
  for (const auto& [name, unused] : configs) {
    AD_CHECK(known.contains(name), kInvalidArgument,
             "strategy: node_config names variable '{}', which is not a trainable variable of "
             "the model",
             name);
  }
  AD_CHECK(!plan.variables.empty(), kInvalidArgument,
           "strategy: the model has no trainable variables");
  for (const strategy::NodeSpec& node : resources.nodes()) {
    if (ps_nodes.contains(node.address)) plan.ps_nodes.push_back(node.address);
  }
  return plan;
}

}  // namespace autodist::kernel
