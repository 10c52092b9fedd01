// The transitions of a job's conditions, each with the Event it is announced by. Conditions
// follow metav1.Condition: lastTransitionTime changes only when the status flips, and
// observedGeneration is the generation the condition was last set for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "operator/reconcile/conditions.h"
#include "operator/reconcile/job_status.h"
#include "operator/reconcile/plan.h"

namespace autodist::reconcile {

class StatusRecorder {
 public:
  // Changes `status` and appends to `events`; `now` is RFC 3339.
  StatusRecorder(JobStatus& status, std::string now, int64_t generation,
                 std::vector<Event>& events);

  const std::string& now() const { return now_; }

  void Created(const std::string& message);
  // True when Compiled became True now (and was announced).
  bool Compiled(const std::string& message);
  // Compiled False with `reason`: ModelNotFound (waiting) announces itself; InvalidModel and
  // CompileFailed are announced by the Failed condition that follows.
  void NotCompiled(const std::string& reason, const std::string& message, bool announce);
  void Pending(const std::string& message);  // Running False, quietly
  // Running False, FailedCreate: a child is refused for now (quota); announced when it changes.
  void CreateRefused(const std::string& message);
  // Running False, Unschedulable: a pod waits past the scheduling timeout; announced on change.
  void Unschedulable(const std::string& message);
  void Running(const std::string& message);
  void Restarting(const std::string& message);  // announced for every restart
  void Succeeded(const std::string& message);
  void Failed(const std::string& reason, const std::string& message);
  void Suspended(const std::string& message);
  void Resumed(const std::string& message);
  // Drops a condition (a Failed InvalidSpec whose spec was edited is judged afresh).
  void Remove(const std::string& type);
  void Announce(const char* type, const std::string& reason, const std::string& message);

 private:
  enum class Change { kNone, kMessage, kTransition };
  Change Set(const std::string& type, bool value, const std::string& reason,
             const std::string& message);
  // Sets the condition to False only when it exists (Running False after a success, ...).
  void SetFalseIfPresent(const std::string& type, const std::string& reason,
                         const std::string& message);

  JobStatus& status_;
  std::string now_;
  int64_t generation_;
  std::vector<Event>& events_;
};

// The word for `kubectl get adj`: the first True condition of Failed, Succeeded, Suspended,
// Restarting, Running, Compiled, Created.
std::string DeriveState(const JobStatus& status);

}  // namespace autodist::reconcile
