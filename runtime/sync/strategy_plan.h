// The graph transformer's plan, AutoDist's three phases read off a compiled Strategy:
//   partitioner   which variables are cut, along which axis, into which shards;
//   replicator    which of the job's data-parallel replicas this node runs (replicator.h);
//   synchronizers how each shard is synchronized: on which parameter server (and how), or in
//                 which all-reduce fusion group (with which algorithm and compressor).
// The runtime executes the plan instead of rewriting the ONNX graph: sessions keep whole
// variables (so every read sees the whole value) and the synchronizer cuts gradients and
// reassembles pulled values along the plan's shard ranges.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/strategy.pb.h"
#include "runtime/collective/communicator.h"
#include "runtime/compress/compressor.h"
#include "runtime/graph/variable.h"
#include "runtime/strategy/resource_spec.h"
#include "runtime/sync/shard.h"

namespace autodist::sync {

enum class SyncKind { kParameterServer, kAllReduce };

// One synchronized tensor: a whole variable or one shard of it.
struct ShardPlan {
  std::string name;      // the variable's name, or "<variable>/part_<i>:0" for a shard
  std::string variable;  // the variable it belongs to
  ShardRange range;      // where it lies in the variable
  tensor::Shape shape;
  SyncKind kind = SyncKind::kParameterServer;

  // kParameterServer (PSSynchronizer).
  std::string ps_node;  // node address of the parameter server hosting it
  bool sync = true;
  int staleness = 0;
  bool local_replication = false;  // one proxy per worker: replicas reduce locally first
  compress::CompressorKind push_compressor = compress::CompressorKind::kNone;
  double push_topk_fraction = 0.01;

  // kAllReduce (AllReduceSynchronizer).
  int group = 0;  // fusion group: one collective per group and step
  collective::AllReduceAlgorithm algorithm = collective::AllReduceAlgorithm::kAuto;
  bool nccl_requested = false;  // spec NCCL, run as RING on CPU
  compress::CompressorOptions compressor;
};

struct VariablePlan {
  std::string name;
  tensor::Shape shape;
  bool sparse = false;       // gradients arrive as rows
  bool partitioned = false;  // more than one shard
  std::vector<ShardPlan> shards;
};

struct StrategyPlan {
  std::vector<VariablePlan> variables;  // in model order
  std::vector<std::string> ps_nodes;    // nodes hosting at least one shard, in ResourceSpec order
  std::vector<int> groups;              // all-reduce fusion groups, ascending

  // The shards `node` hosts, in variable then shard order.
  std::vector<const ShardPlan*> HostedBy(const std::string& node) const;
  // The all-reduced shards of fusion group `group`, in variable then shard order.
  std::vector<const ShardPlan*> GroupMembers(int group) const;
  // The same, checked to share one algorithm and one compressor with the same settings (one
  // collective carries them all): throws InvalidArgument naming two members that differ.
  std::vector<const ShardPlan*> UniformGroupMembers(int group) const;
  bool has_parameter_servers() const { return !ps_nodes.empty(); }
  bool has_all_reduce() const { return !groups.empty(); }
  // Throw Internal for a name that is not planned.
  const VariablePlan& Variable(const std::string& name) const;
  const ShardPlan& Shard(const std::string& name) const;

  std::map<std::string, size_t> index;  // variable name -> position in `variables`
  std::map<std::string, std::pair<size_t, size_t>> shard_index;  // shard -> (variable, shard)
};

// The node address of a device string "<address>:CPU:<i>" / "<address>:GPU:<i>"; throws
// InvalidArgument naming `what` when it is not one.
std::string NodeOfDevice(const std::string& device, const std::string& what);

// Reads the plan of `strategy` for the trainable `variables` (model order). Throws
// InvalidArgument naming the variable for: a variable without node_config or one the model does
// not have, a malformed partitioner or part_config, a parameter server on a device of no node
// of `resources` (or on a `role: worker` node), a negative group, and compressor settings out
// of range.
StrategyPlan PlanStrategy(const autodist::proto::Strategy& strategy,
                          const std::vector<graph::Variable>& variables,
                          const strategy::ResourceSpec& resources);

}  // namespace autodist::sync
