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
  synchronizer.set_compressor(options.compressor);
  if (options.compressor == autodist::proto::AllReduceSynchronizer::TopKCompressorEF) {
    synchronizer.set_topk_fraction(static_cast<float>(options.topk_fraction));
  }
}

void SetAllReduceSynchronizer(const AllReduceOptions& options, int group,
                              autodist::proto::AllReduceSynchronizer& synchronizer) {
  using autodist::proto::AllReduceSynchronizer;
  synchronizer.set_spec(options.spec);
  synchronizer.set_compressor(options.compressor);
  synchronizer.set_group(group);
  // Parameters are written only for the compressor that reads them, so strategies without
  // them stay byte-identical to AutoDist's.
  if (options.compressor == AllReduceSynchronizer::PowerSGDCompressor) {
    synchronizer.set_powersgd_rank(options.powersgd_rank);
    synchronizer.set_powersgd_start_step(options.powersgd_start_step);
    synchronizer.set_min_compression_elements(options.min_compression_elements);
  }
  if (options.compressor == AllReduceSynchronizer::TopKCompressorEF) {
    synchronizer.set_topk_fraction(static_cast<float>(options.topk_fraction));
  }
}

}  // namespace autodist::strategy

namespace autodist::strategy {

int FillPartitionedAllReduce(const graph::Variable& variable, size_t axis, int64_t shards,
                             int counter, const AllReduceOptions& options,
                             autodist::proto::Strategy::Node& node) {
  node.set_var_name(variable.name);
  const int chunk_size = options.chunk_size;
  if (shards <= 1) {
    SetAllReduceSynchronizer(options, counter / chunk_size, *node.mutable_allreducesynchronizer());
    return counter + 1;
  }
  node.set_partitioner(PartitionerString(variable.shape.size(), axis, shards));
  for (int64_t i = 0; i < shards; ++i) {
    auto* part = node.add_part_config();
    part->set_var_name(PartName(variable.name, i));
    SetAllReduceSynchronizer(options, static_cast<int>((counter + i) / chunk_size),
                             *part->mutable_allreducesynchronizer());
  }
  return counter + static_cast<int>(shards);
}

}  // namespace autodist::strategy
