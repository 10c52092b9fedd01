#include "operator/reconcile/status_recorder.h"

#include <algorithm>

namespace autodist::reconcile {
namespace {

constexpr size_t kMaxMessage = 32768;  // the CRD's (and metav1.Condition's) limit

std::string Bounded(const std::string& message) {
  if (message.size() <= kMaxMessage) return message;
  return message.substr(0, kMaxMessage - 3) + "...";
}

}  // namespace

StatusRecorder::StatusRecorder(JobStatus& status, std::string now, int64_t generation,
                               std::vector<Event>& events)
    : status_(status), now_(std::move(now)), generation_(generation), events_(events) {}

StatusRecorder::Change StatusRecorder::Set(const std::string& type, bool value,
                                           const std::string& reason, const std::string& message) {
  const std::string text = value ? "True" : "False";
  const std::string bounded = Bounded(message);
  for (Condition& condition : status_.conditions) {
    if (condition.type != type) continue;
    Change change = Change::kNone;
    if (condition.status != text || condition.reason != reason) {
      change = Change::kTransition;
    } else if (condition.message != bounded) {
      change = Change::kMessage;
    }
    if (condition.status != text) condition.last_transition_time = now_;
    condition.status = text;
    condition.reason = reason;
    condition.message = bounded;
    condition.observed_generation = generation_;
    return change;
  }
  status_.conditions.push_back(Condition{type, text, reason, bounded, now_, generation_});
  return Change::kTransition;
}

void StatusRecorder::SetFalseIfPresent(const std::string& type, const std::string& reason,
                                       const std::string& message) {
  if (status_.Find(type) != nullptr) Set(type, false, reason, message);
}

void StatusRecorder::Announce(const char* type, const std::string& reason,
                              const std::string& message) {
  events_.push_back(Event{type, reason, Bounded(message)});
}

void StatusRecorder::Created(const std::string& message) {
  if (Set(kCreated, true, kReasonJobCreated, message) == Change::kTransition) {
    Announce(kEventNormal, kReasonJobCreated, message);
  }
}

bool StatusRecorder::Compiled(const std::string& message) {
  if (Set(kCompiled, true, kReasonStrategyCompiled, message) != Change::kTransition) return false;
  Announce(kEventNormal, kReasonStrategyCompiled, message);
  return true;
}

void StatusRecorder::NotCompiled(const std::string& reason, const std::string& message,
                                 bool announce) {
  if (Set(kCompiled, false, reason, message) == Change::kTransition && announce) {
    Announce(kEventWarning, reason, message);
  }
}

void StatusRecorder::Pending(const std::string& message) {
  Set(kRunning, false, kReasonPodsPending, message);
}

void StatusRecorder::CreateRefused(const std::string& message) {
  if (Set(kRunning, false, kReasonFailedCreate, message) != Change::kNone) {
    Announce(kEventWarning, kReasonFailedCreate, message);
  }
}

void StatusRecorder::Unschedulable(const std::string& message) {
  if (Set(kRunning, false, kReasonUnschedulable, message) != Change::kNone) {
    Announce(kEventWarning, kReasonUnschedulable, message);
  }
}

void StatusRecorder::Running(const std::string& message) {
  if (Set(kRunning, true, kReasonAllPodsRunning, message) == Change::kTransition) {
    Announce(kEventNormal, kReasonAllPodsRunning, message);
  }
  SetFalseIfPresent(kRestarting, kReasonAllPodsRunning, message);
}

void StatusRecorder::Restarting(const std::string& message) {
  if (Set(kRestarting, true, kReasonGangRestart, message) != Change::kNone) {
    Announce(kEventWarning, kReasonGangRestart, message);
  }
  Set(kRunning, false, kReasonGangRestart, message);
}

void StatusRecorder::Succeeded(const std::string& message) {
  if (Set(kSucceeded, true, kReasonJobSucceeded, message) == Change::kTransition) {
    Announce(kEventNormal, kReasonJobSucceeded, message);
  }
  SetFalseIfPresent(kRunning, kReasonJobSucceeded, message);
  SetFalseIfPresent(kRestarting, kReasonJobSucceeded, message);
}

void StatusRecorder::Failed(const std::string& reason, const std::string& message) {
  if (Set(kFailed, true, reason, message) != Change::kNone) {
    Announce(kEventWarning, reason, message);
  }
  SetFalseIfPresent(kRunning, reason, message);
  SetFalseIfPresent(kRestarting, reason, message);
}

void StatusRecorder::Suspended(const std::string& message) {
  if (Set(kSuspended, true, kReasonJobSuspended, message) == Change::kTransition) {
    Announce(kEventNormal, kReasonJobSuspended, message);
  }
  SetFalseIfPresent(kRunning, kReasonJobSuspended, message);
  SetFalseIfPresent(kRestarting, kReasonJobSuspended, message);
}

void StatusRecorder::Resumed(const std::string& message) {
  if (Set(kSuspended, false, kReasonJobResumed, message) == Change::kTransition) {
    Announce(kEventNormal, kReasonJobResumed, message);
  }
}

void StatusRecorder::Remove(const std::string& type) {
  std::erase_if(status_.conditions, [&](const Condition& c) { return c.type == type; });
}

std::string DeriveState(const JobStatus& status) {
  for (const char* type :
       {kFailed, kSucceeded, kSuspended, kRestarting, kRunning, kCompiled, kCreated}) {
    if (status.IsTrue(type)) return type;
  }
  return "";
}

}  // namespace autodist::reconcile
