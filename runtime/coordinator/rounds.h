// Rounds of the cross-process reduction of replica-local state (bookkeeping only: the service
// waits and holds the lock). Every worker submits its per-tensor sums of a named round once; when
// the last one arrives the result is computed: per tensor, the sum over workers in rank order (so
// the float result does not depend on who arrived first), divided by the total replica count for
// Mean. A round's tensors are freed once every worker collected the result; its name is kept so
// that a repeated submission is rejected instead of opening a round nobody else will join.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "proto/coordinator.pb.h"
#include "runtime/tensor/tensor.h"

namespace autodist::coordinator {

using TensorMap = std::map<std::string, tensor::Tensor>;

// One worker's contribution to a round.
struct ReduceSubmission {
  int replicas = 1;  // how many replicas its sums cover
  std::map<std::string, autodist::proto::StateReduction> reductions;  // per tensor; absent: Mean
  TensorMap sums;
};

class ReduceRounds {
 public:
  // `workers`: worker nodes by rank.
  explicit ReduceRounds(std::vector<std::string> workers);

  // Worker `rank` submits its sums of `round`. Throws InvalidArgument for an empty round name, a
  // replica count below 1, a tensor that is not float32, a reduction for a tensor it did not
  // send, and, naming both workers and the tensor, for tensors (names, shapes, reductions) that
  // differ from another worker's submission: the round then fails for every worker with that
  // message. Throws FailedPrecondition when this worker already submitted the round, the round
  // was reduced already (names are single-use) or failed.
  void Submit(const std::string& round, int rank, ReduceSubmission submission);

  // The reduced tensors once every worker submitted; null before.
  std::shared_ptr<const TensorMap> Result(const std::string& round) const;
  // Why the round cannot complete (a mismatched submission); nullopt when it still can.
  std::optional<std::string> Failure(const std::string& round) const;
  // Workers that have not submitted the round, by rank.
  std::vector<std::string> Missing(const std::string& round) const;

  // Worker `rank` got the result: once every worker has, the round's tensors are freed.
  void Collected(const std::string& round, int rank);
  // Worker `rank` stopped waiting before the round completed (deadline, caller gone): its
  // submission is withdrawn so that a retry can submit again. After completion it counts as
  // collected, since nobody else waits for it.
  void Withdraw(const std::string& round, int rank);

  // Rounds still holding tensors (being submitted, or reduced and not collected by everyone).
  size_t held() const;

 private:
  struct Round {
    std::map<int, ReduceSubmission> submitted;  // by rank
    std::shared_ptr<const TensorMap> result;
    std::vector<bool> collected;  // by rank
    std::optional<std::string> failure;
  };

  void CheckMatches(const std::string& round, const Round& state, int rank,
                    const ReduceSubmission& submission) const;
  TensorMap Reduce(const Round& state) const;

  std::vector<std::string> workers_;
  std::map<std::string, Round> rounds_;
  std::set<std::string> reduced_;  // names of rounds completed and freed
};

}  // namespace autodist::coordinator
