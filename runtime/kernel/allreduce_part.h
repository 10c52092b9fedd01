// The all-reduce half of a worker's step (AutoDist's AllReduceSynchronizer): per fusion group,
// this process's replicas sum their gradients locally, one compressed collective sums them over
// every worker (row-sparse gradients are all-gathered instead, as AutoDist does for
// IndexedSlices), the sum is divided by the job's replica count, and every worker applies the
// optimizer to its own copy — identical everywhere, since every worker applies the same mean to
// the same values.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/compress/compressor.h"
#include "runtime/exec/session.h"
#include "runtime/kernel/sharded_values.h"
#include "runtime/kernel/strategy_plan.h"
#include "runtime/optim/optimizer.h"

namespace autodist::kernel {

class AllReducePart {
 public:
  // `plan` and `communicator` (the job's workers) must outlive the part; `communicator` may be
  // null when the plan all-reduces nothing. Throws InvalidArgument when the members of a fusion
  // group disagree on algorithm or compressor.
  AllReducePart(const StrategyPlan& plan, comm::Communicator* communicator,
                const optim::OptimizerOptions& optimizer, int total_replicas);
  ~AllReducePart();

  bool empty() const { return plan_.groups.empty(); }

  // Optimizer slots of the all-reduced shards ("<shard>/<slot>") to continue from.
  void LoadOptimizerState(const TensorMap& shard_slots);

  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, exec::Gradient>>& gradients,
                   const std::vector<exec::Session*>& replicas);

  // Every all-reduced shard's value (from `replica`) and optimizer slots, added to the maps.
  void CurrentState(exec::Session& replica, TensorMap& shard_values, TensorMap& shard_slots) const;

  // Bytes reduced and sent so far, over every group.
  compress::CompressionStats Stats() const;

 private:
  // Sums a row-sparse gradient over the workers (all-gather of indices and rows, then merged).
  ops::SparseGradient AllGatherSparse(const ops::SparseGradient& local, const std::string& tag);
  // Applies the mean gradient of `shard` to replica 0 and copies the result to the others.
  void Apply(const ShardPlan& shard, const exec::Gradient& mean,
             const std::vector<exec::Session*>& replicas);

  const StrategyPlan& plan_;
  comm::Communicator* communicator_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::map<int, std::unique_ptr<compress::Compressor>> compressors_;  // by group
  float inverse_replicas_;
  int64_t sparse_bytes_ = 0;  // raw = wire bytes of the all-gathered sparse gradients
  int64_t sparse_sent_ = 0;
};

}  // namespace autodist::kernel
