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

autodist::proto::Strategy BuildPartitionedAllReduce(
    const BuildInput& input, int chunk_size,
    const std::function<Cut(const graph::Variable&)>& cut) {
  AllReduceOptions options;  // no compression
  options.chunk_size = chunk_size;
  options.spec = autodist::proto::AllReduceSynchronizer::AUTO;
  autodist::proto::Strategy strategy;
  SetReplicas(input.resources, strategy);
  FusionGroups groups(chunk_size);
  for (const graph::Variable& variable : input.variables) {
    const Cut how = cut(variable);
    autodist::proto::Strategy::Node& node = *strategy.add_node_config();
    node.set_var_name(variable.name);
    if (how.shards <= 1) {
      SetAllReduceSynchronizer(options, groups.Next(), *node.mutable_allreducesynchronizer());
      continue;
    }
    node.set_partitioner(PartitionerString(variable.shape.size(), how.axis, how.shards));
    for (int64_t i = 0; i < how.shards; ++i) {
      auto* part = node.add_part_config();
      part->set_var_name(PartName(variable.name, i));
      SetAllReduceSynchronizer(options, groups.Next(), *part->mutable_allreducesynchronizer());
    }
  }
  return strategy;
}

}  // namespace autodist::strategy
