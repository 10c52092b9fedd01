// spec.runPolicy.restartPolicy applied to one failed member, as Kubeflow's training operator
// defines it; what follows (a gang restart or a failed job) is the planner's.
#pragma once

#include <optional>

#include "runtime/job/job_spec.h"

namespace autodist::reconcile {

enum class FailureClass { kPermanent, kRetryable };

// Kubeflow's rule for restartPolicy ExitCode: 128-255 are signals (SIGKILL of an OOM kill,
// SIGTERM of a node drain) and worth retrying; 1-127 are the program's own verdict.
bool IsRetryableExitCode(int exit_code);

// How `policy` treats a member whose runtime ended with `exit_code` (nullopt: no exit code at
// all, as for an evicted or deleted pod, which ExitCode retries like a signal).
//   Never: permanent. OnFailure: retryable. ExitCode: by the code.
FailureClass ClassifyFailure(job::RestartPolicy policy, std::optional<int> exit_code);

}  // namespace autodist::reconcile
