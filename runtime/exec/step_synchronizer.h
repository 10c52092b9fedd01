// StepSynchronizer: how the training loop turns the gradients of its replicas into the variables
// of the next step. In one process (LocalSynchronizer) that is the optimizer applied here; under
// a Strategy it is the parameter servers (runtime/kernel). The loop itself (trainer.cc) is the
// same in both cases, so single-process and distributed runs share one definition of a step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/exec/session.h"
#include "runtime/tensor/tensor.h"

namespace autodist::exec {

// What a run has put on the network so far, for the chief's TensorBoard scalars.
struct WireTotals {
  // Through the parameter servers, every worker's pushes and pulls (as the servers count them).
  std::optional<int64_t> parameter_server_bytes;
  // The pushes' decoded bytes over their bytes on the wire: what push compression saved (1
  // without it).
  std::optional<double> parameter_server_compression_ratio;
  // This worker's payload in its all-reduce collectives, and the float32 bytes they reduced.
  std::optional<int64_t> all_reduce_bytes;
  std::optional<double> all_reduce_compression_ratio;
};

// Where a run starts: steps already taken and the data position of the next batch.
struct ResumePoint {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t batch = 0;
};

// What a checkpoint or an export needs from the synchronizer.
struct TrainingState {
  std::map<std::string, tensor::Tensor> variables;  // whole trainable variables
  std::map<std::string, tensor::Tensor> optimizer;  // "<variable>/<slot>"
};

// A checkpoint's tensors as the synchronizer has them: whole values in memory, and those the
// parameter servers wrote into shard files beside the checkpoint themselves (by pieces).
struct CheckpointState {
  TrainingState in_memory;
  std::vector<checkpoint::PiecedTensor> pieced_variables;
  std::vector<checkpoint::PiecedTensor> pieced_optimizer;
  std::string warning;  // why the servers' shards were pulled instead (empty: they were not)
};

class StepSynchronizer {
 public:
  virtual ~StepSynchronizer() = default;

  // Called once before the first step. `replicas` are this process's sessions; on the chief (or
  // in one process) they hold the initial or restored values, `start` the restored point and
  // `optimizer_state` the restored optimizer slots (empty when starting fresh). Afterwards every
  // replica of the job holds identical values; returns the point every replica starts from.
  virtual ResumePoint Start(const std::vector<Session*>& replicas, ResumePoint start,
                            const std::map<std::string, tensor::Tensor>& optimizer_state) = 0;

  // Synchronizes step `step` (0-based) with learning rate `lr`: gradients[i] are replica i's.
  // Afterwards every replica holds the variables for the next step.
  virtual void Synchronize(int64_t step, double lr,
                           const std::vector<std::map<std::string, Gradient>>& gradients,
                           const std::vector<Session*>& replicas) = 0;

  // Variables and optimizer slots as they are now, for an export (on the chief).
  virtual TrainingState CurrentState(const std::vector<Session*>& replicas) = 0;
  // The same for the checkpoint to be written at `checkpoint_path`: shards the parameter servers
  // can write themselves go to their shard files (checkpoint::ShardFilePath) instead of here.
  virtual CheckpointState StateForCheckpoint(const std::vector<Session*>& replicas,
                                             const std::string& /*checkpoint_path*/) {
    return CheckpointState{CurrentState(replicas), {}, {}, {}};
  }

  // Replica-local state (BatchNorm running statistics) reduced over every replica of the job:
  // the mean, or the sum for the names in `sum_states`. Collective: every process of the job
  // calls it with the same `round` at the same point of the run.
  virtual std::map<std::string, tensor::Tensor> ReduceStates(
      const std::string& round, const std::vector<Session*>& replicas) = 0;

  // Whether the synchronizer wants each gradient of the step's last replica as soon as backward
  // finishes it (GradientReady), to start communicating while backward goes on.
  virtual bool overlaps_backward() const { return false; }

  // Whether it checks that the gradients handed to GradientReady are finite before they leave
  // this worker (failing with FailDiverged, finite_check.h), off the training thread: on a device
  // the trainer's own check would wait for the device once per gradient, stalling backward.
  virtual bool checks_ready_gradients() const { return false; }

  // During the backward pass of this process's last replica (`replica`) of step `step`:
  // `variable`'s gradient on that replica just became final; earlier[r] for r < replica holds
  // the other replicas' complete gradients of this step. Synchronize(step, ...) still follows.
  // Implementations must copy what they keep: nothing passed here outlives the call for sure.
  virtual void GradientReady(int64_t /*step*/, int /*replica*/, const std::string& /*variable*/,
                             const Gradient& /*gradient*/,
                             const std::vector<std::map<std::string, Gradient>>& /*earlier*/) {}

  // Whether this process evaluates, checkpoints and exports (the chief; the only process).
  virtual bool is_chief() const { return true; }

  // Whether it reads gradients and writes variables in host memory only (network transports):
  // replicas on a device then train through a HostStagedSynchronizer around it
  // (host_staged_synchronizer.h). A synchronizer that works on the replicas' device says false.
  virtual bool works_on_host() const { return false; }

  // Whether, though it works on the host, it takes `variable`'s gradient where backward left it,
  // on the replica's device: a parameter-server push compressed there before it is copied
  // (runtime/compress/device_push_encoder.h). A HostStagedSynchronizer hands such a gradient over
  // uncopied.
  virtual bool TakesOnDevice(const std::string& /*variable*/) const { return false; }

  // Progress after a logged step, for whoever displays it (the coordinator).
  virtual void ReportProgress(int64_t /*step*/, int64_t /*total*/, double /*loss*/,
                              double /*samples_per_second*/) {}

  // The network traffic so far; called on the chief at logged steps. Without a network (one
  // process), nothing.
  virtual WireTotals Wire() { return {}; }
};

// The state tensors of `replicas` reduced in order: the mean over replicas (sum in replica order,
// then divided by the count), or the sum for names in `sum_states`.
std::map<std::string, tensor::Tensor> ReduceLocalStates(const std::vector<Session*>& replicas,
                                                        const std::set<std::string>& sum_states);

}  // namespace autodist::exec
