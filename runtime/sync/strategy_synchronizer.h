// StrategySynchronizer: a worker's training step under a compiled Strategy. Shards placed on
// parameter servers go through the ParameterServerPart, all-reduced ones through the
// AllReducePart (Parallax uses both: dense variables all-reduced, sparse ones on servers); the
// two run at the same time. Starting, checkpoints and replica-local state go through the
// coordinator.
//
// With one communicator per replica (GPU workers over NCCL), the all-reduce runs on the
// replicas' devices (DeviceAllReducePart) and nothing of a step passes through host memory;
// starting, checkpoints and replica-local state copy what they need to and from the host.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/coordinator/client.h"
#include "runtime/exec/step_synchronizer.h"
#include "runtime/optim/optimizer_options.h"
#include "runtime/sync/all_reducer.h"
#include "runtime/sync/ps_part.h"
#include "runtime/sync/replicator.h"
#include "runtime/sync/strategy_plan.h"

namespace autodist::sync {

struct StrategySynchronizerOptions {
  std::string node;     // this worker's node address
  int worker_rank = 0;  // 0: the chief, which initializes the parameter servers
  int num_workers = 1;
  ReplicaPlacement placement;
  std::map<std::string, std::string> ps_endpoints;  // parameter-server node -> host:port
  std::string optimizer;                            // name and options as the manifest gives them
  std::map<std::string, std::string> optimizer_options;
  optim::OptimizerOptions parsed_optimizer;  // the same, parsed (the all-reduce part's)
  std::set<std::string> sum_states;          // replica-local state reduced by sum, not mean
  int64_t batch_size = 0;                    // per replica, for the progress report
  std::chrono::milliseconds wait{std::chrono::minutes(10)};  // rendezvous-like waits
  // Where this worker's replicas are, with replica communicators (the CPU's for each when empty).
  std::vector<tensor::Device> replica_devices;
};

// What a worker moved, for the run's summary.
struct SynchronizerTraffic {
  std::map<std::string, ps::PsStats> servers;  // by parameter-server node (chief only)
  compress::CompressionStats all_reduce;       // this worker's collectives
};

class StrategySynchronizer final : public exec::StepSynchronizer {
 public:
  // `plan`, `coordinator` and `communicator` (may be null without all-reduce groups) must
  // outlive the synchronizer. With `replica_communicators` (one per local replica, ranks of the
  // job's replicas; they must outlive it too) the all-reduce runs on the replicas' devices
  // instead of through `communicator`; the plan must then have no DeviceAllReduceObstacle.
  StrategySynchronizer(const StrategyPlan& plan, StrategySynchronizerOptions options,
                       coordinator::CoordinatorClient& coordinator,
                       collective::Communicator* communicator,
                       std::vector<collective::Communicator*> replica_communicators = {});
  ~StrategySynchronizer() override;

  exec::ResumePoint Start(const std::vector<exec::Session*>& replicas, exec::ResumePoint start,
                          const std::map<std::string, tensor::Tensor>& optimizer_state) override;
  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, exec::Gradient>>& gradients,
                   const std::vector<exec::Session*>& replicas) override;
  exec::TrainingState CurrentState(const std::vector<exec::Session*>& replicas) override;
  // The parameter servers write their shards to shard files beside the checkpoint, all at once;
  // the all-reduce variables come from replica 0. A server that cannot write there (the
  // checkpoint directory is not on a volume it mounts) has all shards pulled instead, with a
  // warning.
  exec::CheckpointState StateForCheckpoint(const std::vector<exec::Session*>& replicas,
                                           const std::string& checkpoint_path) override;
  std::map<std::string, tensor::Tensor> ReduceStates(
      const std::string& round, const std::vector<exec::Session*>& replicas) override;
  bool is_chief() const override { return options_.worker_rank == 0; }
  // Gloo's collectives and the parameter servers' RPCs read and write host memory; the
  // all-reduce on the replicas' devices does not.
  bool works_on_host() const override { return !on_devices_; }
  bool overlaps_backward() const override { return !all_reduce_->empty(); }
  // Pushes the parameter-server part compresses on the replicas' devices.
  bool TakesOnDevice(const std::string& variable) const override {
    return servers_.TakesOnDevice(variable);
  }
  // The variables TakesOnDevice, for the worker's log.
  const std::set<std::string>& pushes_encoded_on_device() const {
    return servers_.encoded_on_device();
  }
  // On the devices the all-reduce part checks each group before reducing it.
  bool checks_ready_gradients() const override { return on_devices_; }
  void GradientReady(int64_t step, int replica, const std::string& variable,
                     const exec::Gradient& gradient,
                     const std::vector<std::map<std::string, exec::Gradient>>& earlier) override {
    all_reduce_->GradientReady(step, replica, variable, gradient, earlier);
  }
  void ReportProgress(int64_t step, int64_t total, double loss, double samples_per_second) override;

  SynchronizerTraffic Traffic();
  // From Traffic(): the servers' totals (the chief asks them) and this worker's collectives.
  exec::WireTotals Wire() override;

 private:
  const StrategyPlan& plan_;
  StrategySynchronizerOptions options_;
  coordinator::CoordinatorClient& coordinator_;
  const bool on_devices_;
  ParameterServerPart servers_;
  std::unique_ptr<AllReducer> all_reduce_;
};

}  // namespace autodist::sync
