// The all-reduce half of a worker's step, as StrategySynchronizer drives it: AllReducePart reduces
// gradients in host memory, across workers (Gloo), after summing a worker's replicas locally;
// DeviceAllReducePart reduces them where the replicas are, one rank per replica (NCCL between
// GPUs). Both end a step with every replica holding the next step's variables.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/compress/compressor.h"
#include "runtime/exec/session.h"
#include "runtime/sync/sharded_values.h"

namespace autodist::sync {

class AllReducer {
 public:
  virtual ~AllReducer() = default;

  // Whether the plan all-reduces nothing.
  virtual bool empty() const = 0;

  // Takes the gradient of `variable` of the last local replica as backward finishes it;
  // `earlier` holds the other replicas' gradients. Copies what it keeps.
  virtual void GradientReady(int64_t step, int replica, const std::string& variable,
                             const exec::Gradient& gradient,
                             const std::vector<std::map<std::string, exec::Gradient>>& earlier) = 0;

  // Optimizer slots of the all-reduced shards ("<shard>/<slot>", on the host) to continue from.
  virtual void LoadOptimizerState(const TensorMap& shard_slots) = 0;

  virtual void Synchronize(int64_t step, double lr,
                           const std::vector<std::map<std::string, exec::Gradient>>& gradients,
                           const std::vector<exec::Session*>& replicas) = 0;

  // Every all-reduced shard's value (from `replica`) and optimizer slots, added to the maps as
  // host tensors.
  virtual void CurrentState(exec::Session& replica, TensorMap& shard_values,
                            TensorMap& shard_slots) const = 0;

  // Bytes reduced and sent so far, over every group.
  virtual compress::CompressionStats Stats() const = 0;
};

}  // namespace autodist::sync
