#include "operator/reconcile/restart_policy.h"

namespace autodist::reconcile {

bool IsRetryableExitCode(int exit_code) { return exit_code >= 128; }

FailureClass ClassifyFailure(job::RestartPolicy policy, std::optional<int> exit_code) {
  switch (policy) {
    case job::RestartPolicy::kNever:
      return FailureClass::kPermanent;
    case job::RestartPolicy::kOnFailure:
      return FailureClass::kRetryable;
    case job::RestartPolicy::kExitCode:
      return !exit_code.has_value() || IsRetryableExitCode(*exit_code) ? FailureClass::kRetryable
                                                                       : FailureClass::kPermanent;
  }
  return FailureClass::kPermanent;
}

}  // namespace autodist::reconcile
