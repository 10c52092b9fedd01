// The StrategyBuilder interface: one class per AutoDist builder, each in its own file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proto/strategy.pb.h"
#include "runtime/graph/variable.h"
#include "runtime/strategy/builder_options.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::strategy {

// Groups of variables that must live on one parameter server (TF's colocate_with).
using ColocationGroups = std::vector<std::vector<std::string>>;

struct BuildInput {
  const std::vector<graph::Variable>& variables;  // trainable variables, in model order
  const ResourceSpec& resources;
  const ColocationGroups& colocation;  // validated: known names, each in at most one group
};

class StrategyBuilder {
 public:
  virtual ~StrategyBuilder() = default;

  // Builds node_config and graph_config; id and path are set by the compiler.
  virtual autodist::proto::Strategy Build(const BuildInput& input) const = 0;

  // Whether the builder places variables on parameter servers (and so honours colocation).
  virtual bool UsesParameterServers() const = 0;
};

// Appends the replicas (every GPU, then the CPUs of GPU-less nodes) to graph_config.
void SetReplicas(const ResourceSpec& resources, autodist::proto::Strategy& strategy);

// Fills a PSSynchronizer from the PS-family options.
void SetPsSynchronizer(const std::string& destination, const PsOptions& options,
                       autodist::proto::PSSynchronizer& synchronizer);

// Fills an AllReduceSynchronizer: spec, compressor (with the parameters it uses) and group.
void SetAllReduceSynchronizer(const AllReduceOptions& options, int group,
                              autodist::proto::AllReduceSynchronizer& synchronizer);

}  // namespace autodist::strategy

namespace autodist::strategy {

// Fills `node` for an all-reduced variable cut into `shards` along `axis` (no cut when
// shards == 1): `options`' spec, no compression, and shard i in group (counter + i) /
// chunk_size, as AutoDist's partitioned all-reduce builders do. Returns the counter advanced by
// `shards`.
int FillPartitionedAllReduce(const graph::Variable& variable, size_t axis, int64_t shards,
                             int counter, const AllReduceOptions& options,
                             autodist::proto::Strategy::Node& node);

}  // namespace autodist::strategy
