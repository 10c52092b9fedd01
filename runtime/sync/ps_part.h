// The parameter-server half of a worker's step: every gradient of a shard placed on a parameter
// server is pushed to it (cut into shards where the variable is partitioned; one Step RPC per
// server, all servers in parallel) and the values the servers return are written back into the
// replicas' sessions.
//
// In-graph replicas of this process: a shard with local_replication (AutoDist's local proxy)
// has its replicas' gradients summed here and pushed once, and the one pulled value is shared by
// every replica; without it each replica pushes and pulls for itself. With one replica per
// process both are the same single push.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/exec/session.h"
#include "runtime/ps/client.h"
#include "runtime/sync/replicator.h"
#include "runtime/sync/sharded_values.h"
#include "runtime/sync/strategy_plan.h"

namespace autodist::sync {

struct ParameterServerPartOptions {
  int worker_rank = 0;
  int num_workers = 1;
  ReplicaPlacement placement;
  std::map<std::string, std::string> endpoints;  // parameter-server node -> host:port
  std::string optimizer;                         // name and options as the manifest gives them
  std::map<std::string, std::string> optimizer_options;
  // Where the replicas are: replies are received into that kind's host staging memory (pinned
  // for GPU workers, whose host path copies them on to the GPUs), and pushes that kind can
  // compress are compressed there (TakesOnDevice).
  tensor::DeviceKind reply_staging = tensor::DeviceKind::kCpu;
};

class ParameterServerPart {
 public:
  // `plan` must outlive the part. Throws InvalidArgument for a server without endpoint. Dense
  // gradients are pushed compressed as each shard's push_compressor says (row-sparse ones as
  // rows); the error-feedback residuals live in the part's clients, so one part serves a run.
  ParameterServerPart(const StrategyPlan& plan, ParameterServerPartOptions options);
  ~ParameterServerPart();

  bool empty() const { return plan_.ps_nodes.empty(); }

  // Whether `variable`'s gradients are pushed compressed from the replicas' devices, before
  // any copy to the host (runtime/compress/device_push_encoder.h): so on GPU workers for a
  // dense variable whole on one server, pushed with a compressor the device kind encodes, by
  // each replica itself (one replica, or no local proxy: a proxy's sum is made on the host).
  bool TakesOnDevice(const std::string& variable) const {
    return encoded_on_device_.contains(variable);
  }
  const std::set<std::string>& encoded_on_device() const { return encoded_on_device_; }

  // On the chief: every server gets its shards' values cut from `variables` (whole values) and
  // its shards' optimizer slots from `optimizer_state` ("<shard>/<slot>"); versions start at
  // `start_step`.
  void Initialize(const TensorMap& variables, const TensorMap& optimizer_state, int64_t start_step);
  // Pulls every shard and writes the whole variables into every replica.
  void PullAll(const std::vector<exec::Session*>& replicas);
  // Pushes step `step`'s gradients of every PS shard and writes the returned values back.
  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, exec::Gradient>>& gradients,
                   const std::vector<exec::Session*>& replicas);
  // Every PS shard's value and optimizer slots ("<shard>/<slot>"), added to the maps.
  void CurrentState(TensorMap& shard_values, TensorMap& shard_slots);
  // Has every server write its shards and their slots to its shard file of checkpoint
  // `checkpoint_path` (checkpoint::ShardFilePath, server i of plan.ps_nodes), all at once.
  // Returns what they wrote, by PS node; throws the first server's error.
  std::map<std::string, autodist::proto::SaveReply> SaveShards(const std::string& checkpoint_path);
  std::map<std::string, ps::PsStats> ServerStats();

 private:
  struct Push;  // one Step RPC of a step: a server, the replicas it covers, its gradients

  ps::PsClient& Client(const std::string& ps_node);
  // Whether the replicas' copies of `shard` can take changed rows in place: a sparse variable
  // held on the CPU, whole or cut along axis 0.
  bool TakesRows(const ShardPlan& shard, const std::vector<exec::Session*>& replicas) const;

  const StrategyPlan& plan_;
  ParameterServerPartOptions options_;
  std::map<std::string, std::unique_ptr<ps::PsClient>> clients_;  // by PS node
  // What the replicas hold of each sparse shard that TakesRows, by (shard, local replica; -1 for
  // the stream that serves them all): sent with the next Step, so that its reply is only the
  // rows changed since. Set from every whole value pulled and every Step reply.
  std::map<std::pair<std::string, int>, ps::HeldVersion> held_;
  std::set<std::string> encoded_on_device_;  // the variables TakesOnDevice
};

}  // namespace autodist::sync
