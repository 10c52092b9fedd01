// The replicator: which of the job's data-parallel replicas one node runs. The Strategy's
// graph_config lists every replica's device in global order (every GPU, then the CPUs of GPU-less
// nodes); a node runs the replicas on its own devices as in-graph replicas of one process, and
// replica i reads shard i of the data.
#pragma once

#include <string>
#include <vector>

#include "proto/strategy.pb.h"

namespace autodist::sync {

struct ReplicaPlacement {
  int first_replica = 0;             // global index of this node's first replica
  int local_replicas = 0;            // 0: the node runs no replica (a dedicated parameter server)
  int total_replicas = 0;            // replicas of the whole job
  std::vector<std::string> devices;  // this node's replica devices, in global order
};

// Throws InvalidArgument when the strategy lists no replicas, a device that is not a device
// string, or a node's replicas that are not consecutive in the list (the data shards of one
// process must be a contiguous range).
ReplicaPlacement PlaceReplicas(const autodist::proto::Strategy& strategy, const std::string& node);

}  // namespace autodist::sync
