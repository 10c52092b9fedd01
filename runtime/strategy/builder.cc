#include "runtime/strategy/builder.h"

#include "runtime/strategy/sharding.h"

namespace autodist::strategy {

void SetReplicas(const ResourceSpec& resources, autodist::proto::Strategy& strategy) {
  for (const std::string& replica : resources.Replicas()) {
    strategy.mutable_graph_config()->add_replicas(replica);
  }
}

void SetPsSynchronizer(const std::string& destination, const PsOptions& options,
                       autodist::proto::PSSynchronizer& synchronizer) {
  synchronizer.set_reduction_destination(destination);
  synchronizer.set_local_replication(options.local_proxy_variable);
  synchronizer.set_sync(options.sync);
  synchronizer.set_staleness(options.staleness);
}

void SetAllReduceSynchronizer(autodist::proto::AllReduceSynchronizer::Spec spec,
                              autodist::proto::AllReduceSynchronizer::Compressor compressor,
                              int group, autodist::proto::AllReduceSynchronizer& synchronizer) {
  synchronizer.set_spec(spec);
  synchronizer.set_compressor(compressor);
  synchronizer.set_group(group);
}

}  // namespace autodist::strategy

namespace autodist::strategy {

int FillPartitionedAllReduce(const graph::Variable& variable, size_t axis, int64_t shards,
                             int counter, int chunk_size, autodist::proto::Strategy::Node& node) {
  node.set_var_name(variable.name);
  const auto spec = autodist::proto::AllReduceSynchronizer::AUTO;
  const auto compressor = autodist::proto::AllReduceSynchronizer::NoneCompressor;
  if (shards <= 1) {
    SetAllReduceSynchronizer(spec, compressor, counter / chunk_size,
                             *node.mutable_allreducesynchronizer());
    return counter + 1;
  }
  node.set_partitioner(PartitionerString(variable.shape.size(), axis, shards));
  for (int64_t i = 0; i < shards; ++i) {
    auto* part = node.add_part_config();
    part->set_var_name(PartName(variable.name, i));
    SetAllReduceSynchronizer(spec, compressor, static_cast<int>((counter + i) / chunk_size),
                             *part->mutable_allreducesynchronizer());
  }
  return counter + static_cast<int>(shards);
}

}  // namespace autodist::strategy
