// The StrategyBuilder interface: one class per AutoDist builder, each in its own file.
#pragma once

#include <functional>
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

// Tensor fusion as AutoDist assigns it: the k-th all-reduced tensor (a variable or a shard, in
// model order) joins group k / chunk_size, so every chunk_size consecutive tensors share one
// collective.
class FusionGroups {
 public:
  explicit FusionGroups(int chunk_size) : chunk_size_(chunk_size) {}
  // The group of the next tensor.
  int Next() { return counter_++ / chunk_size_; }

 private:
  int chunk_size_;
  int counter_ = 0;
};

// How a partitioned all-reduce builder cuts a variable: along `axis` into `shards` (1: not cut).
struct Cut {
  size_t axis = 0;
  int64_t shards = 1;
};

// AutoDist's partitioned all-reduce builders (PartitionedAR, RandomAxisPartitionAR): each
// variable cut as `cut` decides, in model order, and every shard all-reduced with spec AUTO and no
// compression, chunk_size consecutive shards per fusion group.
autodist::proto::Strategy BuildPartitionedAllReduce(
    const BuildInput& input, int chunk_size, const std::function<Cut(const graph::Variable&)>& cut);

}  // namespace autodist::strategy
