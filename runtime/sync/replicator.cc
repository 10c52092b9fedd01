#include "runtime/sync/replicator.h"

#include "runtime/common/error.h"
#include "runtime/sync/strategy_plan.h"

namespace autodist::sync {

ReplicaPlacement PlaceReplicas(const autodist::proto::Strategy& strategy, const std::string& node) {
  const auto& replicas = strategy.graph_config().replicas();
  AD_CHECK(!replicas.empty(), kInvalidArgument, "strategy: graph_config lists no replicas");
  ReplicaPlacement placement;
  placement.total_replicas = replicas.size();
  int last = -1;
  for (int i = 0; i < replicas.size(); ++i) {
    if (NodeOfDevice(replicas[i], "strategy: graph_config.replicas") != node) continue;
    AD_CHECK(last < 0 || last == i - 1, kInvalidArgument,
             "strategy: the replicas of node '{}' are not consecutive in graph_config.replicas "
             "(index {} follows {})",
             node, i, last);
    if (last < 0) placement.first_replica = i;
    last = i;
    placement.devices.push_back(replicas[i]);
  }
  placement.local_replicas = static_cast<int>(placement.devices.size());
  return placement;
}

}  // namespace autodist::sync
