// The all-reduce half of a worker's step (AutoDist's AllReduceSynchronizer): per fusion group,
// this process's replicas sum their gradients locally, one compressed collective sums them over
// every worker (row-sparse gradients are all-gathered instead, as AutoDist does for
// IndexedSlices), the sum is divided by the job's replica count, and every worker applies the
// optimizer to its own copy — identical everywhere, since every worker applies the same mean to
// the same values.
//
// Overlap with backward (Horovod's habit): the trainer hands over each gradient of the step's
// last replica as soon as backward finishes it (GradientReady); once every variable of a fusion
// group is in, the group's collective starts on a communication thread while backward goes on.
// Groups run in the order they complete, which is the same on every worker (same graph, same
// code); groups still incomplete when backward ends run in group order in Synchronize.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/compress/compressor.h"
#include "runtime/exec/session.h"
#include "runtime/observe/metrics.h"
#include "runtime/optim/optimizer.h"
#include "runtime/sync/all_reducer.h"
#include "runtime/sync/sharded_values.h"
#include "runtime/sync/strategy_plan.h"

namespace autodist::sync {

class AllReducePart final : public AllReducer {
 public:
  // `plan` and `communicator` (the job's workers) must outlive the part; `communicator` may be
  // null when the plan all-reduces nothing. Throws InvalidArgument when the members of a fusion
  // group disagree on algorithm or compressor.
  AllReducePart(const StrategyPlan& plan, collective::Communicator* communicator,
                const optim::OptimizerOptions& optimizer, int total_replicas);
  ~AllReducePart() override;

  bool empty() const override { return plan_.groups.empty(); }

  // Takes the gradient of `variable` of the last local replica as backward finishes it (see the
  // header comment); `earlier` holds the other replicas' gradients. Copies what it keeps.
  void GradientReady(int64_t step, int replica, const std::string& variable,
                     const exec::Gradient& gradient,
                     const std::vector<std::map<std::string, exec::Gradient>>& earlier) override;

  // Optimizer slots of the all-reduced shards ("<shard>/<slot>") to continue from.
  void LoadOptimizerState(const TensorMap& shard_slots) override;

  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, exec::Gradient>>& gradients,
                   const std::vector<exec::Session*>& replicas) override;

  void CurrentState(exec::Session& replica, TensorMap& shard_values,
                    TensorMap& shard_slots) const override;

  compress::CompressionStats Stats() const override;

 private:
  // A group ready for its collectives: its shards with the local sums of their variables (held
  // in summed_, whose elements never move; the communication thread reads only these).
  struct GroupWork {
    int group = 0;
    std::vector<std::pair<const ShardPlan*, exec::Gradient*>> members;
  };
  // One group's shards after the collectives: the sums over every worker.
  struct ReducedGroup {
    std::vector<const ShardPlan*> shards;
    std::deque<exec::Gradient> gradients;  // by shard
  };

  // Sums a row-sparse gradient over the workers (sparse_all_gather.h), counting its bytes.
  tensor::SparseGradient AllGatherSparse(const tensor::SparseGradient& local,
                                         const std::string& tag);
  // The sum of several replicas' gradients as a fresh copy.
  static exec::Gradient OwnedSum(const std::vector<const exec::Gradient*>& parts);
  // `group`'s members with a local sum in summed_ (variables without one have no gradient this
  // step); under mutex_ or while the communication thread is idle.
  GroupWork WorkFor(int group);
  // Runs the collectives of one group.
  ReducedGroup ReduceGroup(const GroupWork& work, int64_t step);
  // The step's overlapped groups, once the communication thread has finished them; rethrows
  // its error.
  std::map<int, ReducedGroup> TakeOverlapped();
  void CommunicationLoop();
  // Adds what the communicator sent and received since the last call to the process's byte
  // counters (runtime_metrics.h).
  void CountTraffic();
  // Applies the mean gradient of `shard` to replica 0 and copies the result to the others.
  void Apply(const ShardPlan& shard, const exec::Gradient& mean,
             const std::vector<exec::Session*>& replicas);

  const StrategyPlan& plan_;
  collective::Communicator* communicator_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::map<int, std::unique_ptr<compress::Compressor>> compressors_;  // by group
  // autodist_runtime_all_reduce_duration_seconds{group}, looked up once: a lookup locks.
  std::map<int, observe::Histogram*> durations_;
  float inverse_replicas_;
  int64_t sparse_bytes_ = 0;  // raw = wire bytes of the all-gathered sparse gradients
  int64_t sparse_sent_ = 0;
  int64_t counted_sent_ = 0;  // the communicator's totals at the last CountTraffic
  int64_t counted_received_ = 0;

  // Per step: this process's replicas' gradients summed, per variable (a fresh copy, never the
  // trainer's tensors, so nothing here depends on their lifetime).
  std::map<std::string, exec::Gradient> summed_;
  std::map<int, int> group_variables_;  // group -> distinct member variables
  std::map<int, int> missing_;          // group -> member variables not in summed_ yet

  // The communication thread and what it shares with the training thread.
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t overlap_step_ = -1;
  std::deque<GroupWork> queued_;      // complete groups, in completion order
  bool busy_ = false;                 // the thread is reducing a group
  std::map<int, ReducedGroup> done_;  // groups reduced this step
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace autodist::sync
