// The all-reduce half of a worker's step where the replicas' tensors are, for replicas on GPUs
// (NCCL): every replica is a rank of its own (the job's global replica index), so a worker's
// replicas are not summed first; NCCL reduces over all of them and sees the pod's GPUs as one
// node. Per fusion group and replica:
//
// * the group's gradients are copied into one flat buffer on the replica's device as backward
//   finishes them (Horovod's fusion buffer; each member starts at a multiple of 4 elements, so
//   that the fused optimizer's vector loads stay aligned);
// * once a group is complete, a communication thread per replica all-reduces its buffer (sum)
//   while backward goes on, groups in the order they complete, which is the same on every rank
//   (through the group's compressor, compress/flat_compressor.h, when it has one); while a
//   timeline records, the group is first marked ready on each replica's communicator
//   (Communicator::DataReady), from which the NCCL communicator's device times show when the
//   GPU had finished the group, apart from when its reduction ran;
// * before a group or a row-sparse gradient leaves the worker, its thread checks that it is finite
//   (one scalar read on a device, exec/finite_check.h), so that a diverged worker fails itself,
//   naming the gradient, without backward waiting for the check (checks_ready_gradients);
// * after backward, each replica multiplies its sums by 1 / (the job's replicas) and applies its
//   own optimizer to its own variables, on its device: every rank holds the same sums, so the
//   replicas stay identical without a broadcast;
// * row-sparse gradients (an embedding's) are not fused: after backward each replica's thread
//   all-gathers its rows (sparse_all_gather.h: indices, then rows, from the device), merges every
//   rank's on the host as the host path does, and the mean goes back to the device for the
//   optimizer's sparse update. The rows cross the host once each way; the table never does.
//
// A process's ranks call their collectives from their own threads at once: NCCL's "one thread
// per GPU". Nothing here names a device library: buffers are tensors, the mean is the backend's
// Mul kernel and the optimizer the backend's, so the same part runs on CPU tensors (with Gloo),
// which is how the CPU tests check it against AllReducePart. What it cannot do lives on the
// host path (AllReducePart through host staging): DeviceAllReduceObstacle says which.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/compress/flat_compressor.h"
#include "runtime/exec/finite_check.h"
#include "runtime/exec/standalone_kernel.h"
#include "runtime/observe/metrics.h"
#include "runtime/optim/optimizer.h"
#include "runtime/sync/all_reducer.h"
#include "runtime/sync/strategy_plan.h"

namespace autodist::sync {

// Why `plan` cannot be all-reduced by DeviceAllReducePart on devices of `device`
// ("variable 'w' is partitioned ..."), nullopt when it can: parameter-server shards, partitioned
// variables, a compressor without a flat form there (compress/flat_compressor.h), and an
// all-reduce spec other than AUTO and NCCL (RING asks for Gloo's ring) stay on the host path.
std::optional<std::string> DeviceAllReduceObstacle(const StrategyPlan& plan,
                                                   tensor::DeviceKind device);

class DeviceAllReducePart final : public AllReducer {
 public:
  // communicators[r] is this process's replica r's rank (all of size `total_replicas`), and
  // devices[r] where that replica's tensors are. `plan` and the communicators must outlive the
  // part. Throws InvalidArgument with DeviceAllReduceObstacle's reason for a plan it cannot
  // run, and Internal unless there is one communicator per device.
  DeviceAllReducePart(const StrategyPlan& plan,
                      std::vector<collective::Communicator*> communicators,
                      std::vector<tensor::Device> devices, const optim::OptimizerOptions& optimizer,
                      int total_replicas);
  ~DeviceAllReducePart() override;
  DeviceAllReducePart(const DeviceAllReducePart&) = delete;
  DeviceAllReducePart& operator=(const DeviceAllReducePart&) = delete;

  bool empty() const override { return groups_.empty() && sparse_.empty(); }
  void GradientReady(int64_t step, int replica, const std::string& variable,
                     const exec::Gradient& gradient,
                     const std::vector<std::map<std::string, exec::Gradient>>& earlier) override;
  // Loaded into every replica's optimizer.
  void LoadOptimizerState(const TensorMap& shard_slots) override;
  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, exec::Gradient>>& gradients,
                   const std::vector<exec::Session*>& replicas) override;
  // The optimizer slots are the first replica's (every replica's are the same).
  void CurrentState(exec::Session& replica, TensorMap& shard_values,
                    TensorMap& shard_slots) const override;
  // Over every group: the compressors' totals, and the float32 bytes of uncompressed groups.
  compress::CompressionStats Stats() const override;

 private:
  struct Member {
    const ShardPlan* shard = nullptr;
    int64_t offset = 0;  // elements into the group's buffer
    int64_t count = 0;
  };
  struct Group {
    int id = 0;
    std::string name;  // "group-<id>": collective tag, metric label
    std::vector<Member> members;
    int64_t elements = 0;  // the members' elements
    int64_t padded = 0;    // the buffer's elements
    collective::AllReduceAlgorithm algorithm = collective::AllReduceAlgorithm::kAuto;
    compress::CompressorOptions compressor;  // kNone: a plain all-reduce of the buffer
    observe::Histogram* duration = nullptr;
  };
  // A row-sparse variable: all-gathered on its own, not fused (a table's gradient is a few rows).
  struct SparseMember {
    const ShardPlan* shard = nullptr;
    std::string tag;  // "group-<id>/<shard>", as on the host path
  };
  // A communication thread's next piece of work.
  struct Work {
    bool sparse = false;  // sparse_[index], else groups_[index]
    size_t index = 0;
    int64_t step = 0;
  };
  struct Replica {
    tensor::Device device;
    collective::Communicator* communicator = nullptr;
    std::unique_ptr<optim::Optimizer> optimizer;
    std::unique_ptr<exec::StandaloneKernel> multiply;
    std::unique_ptr<exec::DeviceFiniteCheck> finite;  // null on the CPU (checked on the host)
    tensor::Tensor inverse;                           // 1 / total replicas, a scalar on the device
    std::vector<tensor::Tensor> buffers;              // by group index; allocated on first use
    std::vector<std::unique_ptr<compress::FlatCompressor>> compressors;  // by group; null: none
    std::deque<Work> queued;  // to reduce, in order (under mutex_)
    bool busy = false;        // reducing (under mutex_)
    // By sparse member: this step's row-sparse gradient (the trainer's, on the device) and its
    // gathered sum (on the host), set before and by the thread.
    std::vector<const tensor::SparseGradient*> sparse_inputs;
    std::vector<tensor::SparseGradient> sparse_sums;
    std::thread thread;
  };

  // Starts step `step`'s bookkeeping: no member packed, no group queued.
  void BeginStep(int64_t step);
  // Group `g`'s buffer on replica `r`, zero-filled when first made.
  tensor::Tensor& Buffer(size_t r, size_t g);
  // Copies each replica's gradient of member `m` of group `g` into its buffer.
  void Pack(size_t g, size_t m, const std::vector<const exec::Gradient*>& sources);
  // Hands group `g` to every replica's communication thread.
  void Queue(size_t g);
  // Hands this step's row-sparse gradients to every replica's communication thread.
  void QueueSparse(int64_t step,
                   const std::vector<std::map<std::string, exec::Gradient>>& gradients);
  // Applies the mean of each gathered row-sparse gradient to every replica's variable.
  void ApplySparse(const std::vector<exec::Session*>& replicas);
  // One piece of work on replica `r`'s thread.
  void Reduce(size_t r, const Work& work);
  // FailDiverged naming the first gradient of `work` on replica `r` that is not finite.
  void CheckFinite(size_t r, const Work& work);
  // Waits until every communication thread is idle; rethrows the first error one met.
  void WaitIdle();
  void CommunicationLoop(size_t r);
  void CountTraffic();

  const StrategyPlan& plan_;
  std::vector<Group> groups_;                               // ascending ids
  std::map<std::string, std::pair<size_t, size_t>> where_;  // variable -> (group, member)
  std::vector<SparseMember> sparse_;                        // in group order
  std::vector<bool> sparse_present_;  // by sparse member: a gradient this step (training thread)
  std::vector<std::unique_ptr<Replica>> replicas_;

  // The step being packed (training thread only).
  int64_t step_ = -1;
  std::vector<std::vector<bool>> packed_;  // by group, member
  std::vector<size_t> missing_;            // by group: members not packed yet
  std::vector<bool> queued_;               // by group: handed to the threads this step
  // By group: the members with a gradient, set before the group is handed to the threads.
  std::vector<std::vector<compress::FlatMember>> present_;

  std::atomic<int64_t> reduced_bytes_{0};
  std::atomic<int64_t> sparse_bytes_{0};  // raw = wire bytes of the gathered rows, as on the host
  std::atomic<int64_t> sparse_sent_{0};
  float inverse_replicas_ = 1.0F;
  int64_t counted_sent_ = 0;  // the communicators' totals at the last CountTraffic
  int64_t counted_received_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::exception_ptr error_;
  bool stopping_ = false;
};

}  // namespace autodist::sync
