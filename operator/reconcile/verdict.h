// What the pods of the current restart generation say about the job: still going, succeeded
// (the chief, worker 0, succeeded), failed for good, or worth a gang restart.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "operator/reconcile/members.h"
#include "operator/reconcile/observed_pods.h"
#include "operator/reconcile/time_format.h"
#include "runtime/job/job_spec.h"

namespace autodist::reconcile {

struct Verdict {
  enum class Kind { kActive, kChiefSucceeded, kPermanentFailure, kRetryableFailure };
  Kind kind = Kind::kActive;
  std::string message;  // what happened, naming the pods (empty for kActive)
  // kActive while waiting for the cause of a failure seen only as exit code 3: judge again then.
  std::optional<std::chrono::seconds> judge_again_in;
};

// How long members that stopped because another failed (exit code 3) wait, while other members
// still run, for the one that failed to end with its own exit code: the chief tells everyone
// and stays until they heard (a heartbeat timeout, 10 s by default), then ends itself.
inline constexpr std::chrono::seconds kCauseGrace{30};

// `current`: the job's pods of the current restart generation. `was_running`: every member ran
// in this generation, so a member without a pod has disappeared (deleted, or its node drained)
// rather than not being created yet; a lone replacement could not rejoin a synchronous job, so
// it counts as a failure without an exit code, as does a member whose pod is Terminating (deleted
// by someone else: a user, a drain, an eviction). Before every member ran, a Terminating pod is
// not judged (a suspension's leftover).
//
// Success wins: the chief's success means training finished. Otherwise every failed member is
// classified by the restart policy; exit code 3 (the runtime stopped because another member
// failed) is never a cause while any other failure is seen; seen alone, the verdict waits up to
// kCauseGrace from the first such exit (at `now`) while other members still run, then stands for
// the cause (retryable). One permanent failure fails the job; otherwise any failure restarts it.
Verdict JudgeMembers(const std::vector<ObservedPod>& current, const JobMembers& members,
                     job::RestartPolicy policy, bool was_running, TimePoint now);

// Which member failed first, for the MemberFailed Event: of the failed pods, the one whose
// runtime terminated earliest (a member stopped because another failed, exit code 3, only when
// no other failed), with its exit and the last line of its termination message (the runtime's
// error line). Empty when no pod failed with an exit (a member that disappeared has none).
std::string FirstFailure(const std::vector<ObservedPod>& current, const JobMembers& members);

}  // namespace autodist::reconcile
