// PsSynchronizer: the training step of a worker under a parameter-server Strategy. Each step it
// pushes every gradient to the parameter server hosting it (cut into shards where the variable
// is partitioned; one Step RPC per parameter server, all parameter servers in parallel) and
// writes the values the servers return back into its replicas' sessions.
//
// In-graph replicas of this process: a variable with local_replication (AutoDist's local proxy)
// has its replicas' gradients summed here and pushed once, and the one pulled value is shared by
// every replica; without it each replica pushes and pulls for itself. With one replica per
// process both are the same single push.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/comm/coordinator_client.h"
#include "runtime/comm/ps_client.h"
#include "runtime/exec/step_synchronizer.h"
#include "runtime/kernel/replicator.h"
#include "runtime/kernel/strategy_plan.h"

namespace autodist::kernel {

struct PsSynchronizerOptions {
  std::string node;     // this worker's node address
  int worker_rank = 0;  // 0: the chief, which initializes the parameter servers
  int num_workers = 1;
  ReplicaPlacement placement;
  std::map<std::string, std::string> ps_endpoints;  // parameter-server node -> host:port
  std::string optimizer;                            // name and options as the manifest gives them
  std::map<std::string, std::string> optimizer_options;
  std::set<std::string> sum_states;  // replica-local state reduced by sum rather than mean
  int64_t batch_size = 0;            // per replica, for the progress report
  std::chrono::milliseconds wait{std::chrono::minutes(10)};  // rendezvous-like waits
};

class PsSynchronizer final : public exec::StepSynchronizer {
 public:
  // `plan` and `coordinator` must outlive the synchronizer.
  PsSynchronizer(const StrategyPlan& plan, PsSynchronizerOptions options,
                 comm::CoordinatorClient& coordinator);
  ~PsSynchronizer() override;

  exec::ResumePoint Start(const std::vector<exec::Session*>& replicas, exec::ResumePoint start,
                          const std::map<std::string, tensor::Tensor>& optimizer_state) override;
  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, exec::Gradient>>& gradients,
                   const std::vector<exec::Session*>& replicas) override;
  exec::TrainingState CurrentState(const std::vector<exec::Session*>& replicas) override;
  std::map<std::string, tensor::Tensor> ReduceStates(
      const std::string& round, const std::vector<exec::Session*>& replicas) override;
  bool is_chief() const override { return options_.worker_rank == 0; }
  void ReportProgress(int64_t step, int64_t total, double loss, double samples_per_second) override;

  // Traffic counters of every parameter server (queried from the servers).
  std::map<std::string, comm::PsStats> ServerStats();

 private:
  struct Push;  // one Step RPC of a step: a server, the replicas it covers, its gradients

  comm::PsClient& Client(const std::string& ps_node);
  void InitializeServers(exec::Session& chief, int64_t start_step,
                         const std::map<std::string, tensor::Tensor>& optimizer_state);
  // Pulls every shard and writes the whole variables into every replica.
  void PullAll(const std::vector<exec::Session*>& replicas);

  const StrategyPlan& plan_;
  PsSynchronizerOptions options_;
  comm::CoordinatorClient& coordinator_;
  std::map<std::string, std::unique_ptr<comm::PsClient>> clients_;  // by PS node
};

}  // namespace autodist::kernel
