// The graph transformer's plan, AutoDist's three phases read off a compiled Strategy:
//   partitioner   which variables are cut, along which axis, into which shards;
//   replicator    which of the job's data-parallel replicas this node runs (replicator.h);
//   synchronizers which parameter server hosts each shard, and how it is synchronized.
// The runtime executes the plan instead of rewriting the ONNX graph: sessions keep whole
// variables (so every read sees the whole value) and the synchronizer cuts gradients and
// reassembles pulled values along the plan's shard ranges.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/strategy.pb.h"
#include "runtime/graph/variable.h"
#include "runtime/kernel/shard.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::kernel {

// One tensor a parameter server hosts: a whole variable or one shard of it.
struct ShardPlan {
  std::string name;      // the variable's name, or "<variable>/part_<i>:0" for a shard
  std::string variable;  // the variable it belongs to
  ShardRange range;      // where it lies in the variable
  tensor::Shape shape;
  std::string ps_node;  // node address of the parameter server hosting it
  bool sync = true;
  int staleness = 0;
  bool local_replication = false;  // one proxy per worker: replicas reduce locally first
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

  // The shards `node` hosts, in variable then shard order.
  std::vector<const ShardPlan*> HostedBy(const std::string& node) const;
  // Throws Internal for a name that is not planned.
  const VariablePlan& Variable(const std::string& name) const;

  std::map<std::string, size_t> index;  // variable name -> position in `variables`
};

// The node address of a device string "<address>:CPU:<i>" / "<address>:GPU:<i>"; throws
// InvalidArgument naming `what` when it is not one.
std::string NodeOfDevice(const std::string& device, const std::string& what);

// Reads the plan of `strategy` for the trainable `variables` (model order). Throws
// InvalidArgument naming the variable for: a variable without node_config or one the model does
// not have, a malformed partitioner or part_config, a parameter server on a device of no node
// of `resources` (or on a `role: worker` node), and an all-reduce synchronizer, which this
// runtime does not run yet (parameter-server strategies only).
StrategyPlan PlanStrategy(const autodist::proto::Strategy& strategy,
                          const std::vector<graph::Variable>& variables,
                          const strategy::ResourceSpec& resources);

}  // namespace autodist::kernel
