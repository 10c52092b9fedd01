#include "runtime/sync/strategy_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "runtime/common/error.h"
#include "runtime/compress/registry.h"
#include "runtime/strategy/sharding.h"

namespace autodist::sync {
namespace {

using autodist::proto::AllReduceSynchronizer;
using autodist::proto::PSSynchronizer;
using autodist::proto::Strategy;

// A compressor kind's value is its wire value in the Strategy (compressor.h).
static_assert(static_cast<int>(compress::CompressorKind::kNone) ==
              AllReduceSynchronizer::NoneCompressor);
static_assert(static_cast<int>(compress::CompressorKind::kHorovod) ==
              AllReduceSynchronizer::HorovodCompressor);
static_assert(static_cast<int>(compress::CompressorKind::kHorovodEF) ==
              AllReduceSynchronizer::HorovodCompressorEF);
static_assert(static_cast<int>(compress::CompressorKind::kPowerSGD) ==
              AllReduceSynchronizer::PowerSGDCompressor);
static_assert(static_cast<int>(compress::CompressorKind::kTopKEF) ==
              AllReduceSynchronizer::TopKCompressorEF);

compress::CompressorKind KindOf(AllReduceSynchronizer::Compressor compressor,
                                const std::string& what) {
  return compress::CompressorKindOfWireValue(compressor, "strategy: " + what);
}

// A TopK fraction as the strategy stores it (0: the default 1%), checked to be in (0, 1].
double TopKFraction(float stored, const std::string& what) {
  const double fraction = stored == 0.0F ? 0.01 : static_cast<double>(stored);
  AD_CHECK(fraction > 0.0 && fraction <= 1.0, kInvalidArgument,
           "strategy: {} has topk_fraction {}, expected a number in (0, 1]", what, stored);
  return fraction;
}

// The node hosting a PS device, checked against the resource spec.
std::string PsNode(const PSSynchronizer& ps, const std::map<std::string, strategy::NodeRole>& roles,
                   const std::string& what) {
  std::string node = NodeOfDevice(ps.reduction_destination(), what);
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

void SetParameterServer(const PSSynchronizer& ps,
                        const std::map<std::string, strategy::NodeRole>& roles,
                        const std::string& what, ShardPlan& shard) {
  shard.kind = SyncKind::kParameterServer;
  shard.ps_node = PsNode(ps, roles, what);
  shard.sync = ps.sync();
  shard.staleness = ps.sync() ? ps.staleness() : 0;
  shard.local_replication = ps.local_replication();
  shard.push_compressor = KindOf(ps.compressor(), what);
  AD_CHECK(compress::FindCompressor(shard.push_compressor).pushes, kInvalidArgument,
           "strategy: {} compresses its pushes with {}, which needs an all-reduce", what,
           compress::CompressorName(shard.push_compressor));
  shard.push_topk_fraction = TopKFraction(ps.topk_fraction(), what);
}

void SetAllReduce(const AllReduceSynchronizer& ar, const std::string& what, ShardPlan& shard) {
  shard.kind = SyncKind::kAllReduce;
  AD_CHECK(ar.group() >= 0, kInvalidArgument, "strategy: {} has negative group {}", what,
           ar.group());
  shard.group = ar.group();
  switch (ar.spec()) {
    case AllReduceSynchronizer::AUTO:
      shard.algorithm = collective::AllReduceAlgorithm::kAuto;
      break;
    case AllReduceSynchronizer::NCCL:
      // No GPU in this runtime: NCCL's place is taken by the CPU's fastest all-reduce, AUTO
      // (the caller warns once). Gloo's ring runs on its event loop: in a training step it took
      // 2.7 ms for the MLP's 0.94 MB and about 1.8 ms for each of PowerSGD's few-KiB factors,
      // where AUTO's halving-doubling took 0.7 ms and 0.1 ms (docs/performance.md, "Auto").
      shard.algorithm = collective::AllReduceAlgorithm::kAuto;
      shard.nccl_requested = true;
      break;
    case AllReduceSynchronizer::RING:
      shard.algorithm = collective::AllReduceAlgorithm::kRing;
      break;
    default:
      Fail(ErrorCode::kInvalidArgument, "strategy: {} has an unknown all-reduce spec value {}",
           what, static_cast<int>(ar.spec()));
  }
  compress::CompressorOptions& options = shard.compressor;
  options.kind = KindOf(ar.compressor(), what);
  options.algorithm = shard.algorithm;
  options.rank = ar.powersgd_rank() == 0 ? 1 : ar.powersgd_rank();
  AD_CHECK(options.rank >= 1 && ar.powersgd_start_step() >= 0 && ar.min_compression_elements() >= 0,
           kInvalidArgument,
           "strategy: {} has PowerSGD settings out of range (rank {}, start step {}, minimum "
           "elements {})",
           what, ar.powersgd_rank(), ar.powersgd_start_step(), ar.min_compression_elements());
  options.start_step = ar.powersgd_start_step();
  options.min_compression_elements = ar.min_compression_elements();
  options.fraction = TopKFraction(ar.topk_fraction(), what);
}

void SetSynchronizer(const Strategy::Node& node,
                     const std::map<std::string, strategy::NodeRole>& roles,
                     const std::string& what, ShardPlan& shard) {
  if (node.has_pssynchronizer()) {
    SetParameterServer(node.pssynchronizer(), roles, what, shard);
  } else if (node.has_allreducesynchronizer()) {
    SetAllReduce(node.allreducesynchronizer(), what, shard);
  } else {
    Fail(ErrorCode::kInvalidArgument, "strategy: {} has no synchronizer", what);
  }
}

ShardPlan MakeShard(std::string name, const graph::Variable& variable, ShardRange range,
                    const Strategy::Node& node,
                    const std::map<std::string, strategy::NodeRole>& roles,
                    const std::string& what) {
  ShardPlan shard;
  shard.name = std::move(name);
  shard.variable = variable.name;
  shard.range = range;
  shard.shape = range.ShapeIn(variable.shape);
  SetSynchronizer(node, roles, what, shard);
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
      if (shard.kind == SyncKind::kParameterServer && shard.ps_node == node) {
        hosted.push_back(&shard);
      }
    }
  }
  return hosted;
}

const ShardPlan& StrategyPlan::Shard(const std::string& name) const {
  const auto it = shard_index.find(name);
  AD_CHECK(it != shard_index.end(), kInternal, "the strategy plan has no shard '{}'", name);
  return variables[it->second.first].shards[it->second.second];
}

std::vector<const ShardPlan*> StrategyPlan::GroupMembers(int group) const {
  std::vector<const ShardPlan*> members;
  for (const VariablePlan& variable : variables) {
    for (const ShardPlan& shard : variable.shards) {
      if (shard.kind == SyncKind::kAllReduce && shard.group == group) members.push_back(&shard);
    }
  }
  return members;
}

std::vector<const ShardPlan*> StrategyPlan::UniformGroupMembers(int group) const {
  std::vector<const ShardPlan*> members = GroupMembers(group);
  for (const ShardPlan* member : members) {
    const ShardPlan& first = *members.front();
    const bool same =
        member->algorithm == first.algorithm && member->compressor.kind == first.compressor.kind &&
        member->compressor.rank == first.compressor.rank &&
        member->compressor.start_step == first.compressor.start_step &&
        member->compressor.min_compression_elements == first.compressor.min_compression_elements &&
        member->compressor.fraction == first.compressor.fraction;
    AD_CHECK(same, kInvalidArgument,
             "strategy: '{}' and '{}' share all-reduce group {} but not its algorithm and "
             "compressor settings",
             first.name, member->name, group);
  }
  return members;
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
  std::set<int> groups;
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
      out.shards.push_back(MakeShard(variable.name, variable, ShardRange::Whole(variable.shape),
                                     config, roles, what));
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
        const ShardRange range{axis, offset, strategy::ShardExtent(dim, count, i)};
        out.shards.push_back(MakeShard(name, variable, range, part, roles, part_what));
        offset += range.extent;
      }
      out.partitioned = count > 1;
    }
    for (const ShardPlan& shard : out.shards) {
      if (shard.kind == SyncKind::kParameterServer) ps_nodes.insert(shard.ps_node);
      if (shard.kind == SyncKind::kAllReduce) groups.insert(shard.group);
    }
    plan.index[out.name] = plan.variables.size();
    for (size_t i = 0; i < out.shards.size(); ++i) {
      plan.shard_index[out.shards[i].name] = {plan.variables.size(), i};
    }
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
  plan.groups.assign(groups.begin(), groups.end());
  return plan;
}

}  // namespace autodist::sync
