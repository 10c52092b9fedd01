// The job's pods as the controller observed them, reduced to what the run policy decides on:
// which member, which restart generation, and how its runtime ended.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "operator/reconcile/job_object.h"
#include "operator/reconcile/names.h"

namespace autodist::reconcile {

// A member's state, judged by its autodist-runtime container first (in a pod with sidecars the
// pod phase also waits for the user's containers) and by the pod phase otherwise.
enum class MemberPhase { kPodPending, kPodRunning, kPodSucceeded, kPodFailed };

struct ObservedPod {
  std::string name;
  std::string uid;
  Role role = Role::kWorker;
  int index = 0;
  int generation = 0;  // autodist.io/restart-generation (0 when absent)
  MemberPhase phase = MemberPhase::kPodPending;
  std::optional<int> exit_code;  // of the runtime container, when it terminated
  std::string reason;            // OOMKilled, Error, Evicted, ... when known
  std::string finished_at;       // RFC 3339, when the runtime container terminated
  std::string last_line;         // of its termination message (the runtime's error), if any
  bool terminating = false;      // metadata.deletionTimestamp is set
  std::string created;           // metadata.creationTimestamp (RFC 3339)
  // Scheduling: bound to a node, else who should bind it and what it said (PodScheduled False).
  bool scheduled = false;
  std::string scheduler = "default-scheduler";
  std::string unschedulable;  // PodScheduled False's message, "" when none was written

  bool Active() const {
    return phase == MemberPhase::kPodPending || phase == MemberPhase::kPodRunning;
  }
};

// The pods among `pods` that belong to `job`: controlled by it (ownerReference) and labelled with
// a replica type and index. Others (a foreign pod with a matching label) are left out.
std::vector<ObservedPod> ObservePods(const std::vector<nlohmann::json>& pods, const JobRef& job);

// "exit code 137 (OOMKilled)", "no exit code (Evicted)", ...
std::string DescribeEnd(const ObservedPod& pod);

}  // namespace autodist::reconcile
