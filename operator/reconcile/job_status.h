// status of an AutoDistJob (the CRD's status schema) as a typed value: read from the object,
// changed by the reconcile, written back through the status subresource only when it differs.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace autodist::reconcile {

// metav1.Condition.
struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;
  std::optional<int64_t> observed_generation;

  bool operator==(const Condition&) const = default;
};

struct ReplicaStatus {
  int active = 0;  // pending or running
  int succeeded = 0;
  int failed = 0;

  bool operator==(const ReplicaStatus&) const = default;
};

struct JobStatus {
  std::optional<int64_t> observed_generation;
  std::string state;  // the one word kubectl get shows
  std::vector<Condition> conditions;
  std::map<std::string, ReplicaStatus> replica_statuses;  // "Worker", "PS"
  nlohmann::json strategy;                                // null until compiled
  nlohmann::json progress;                                // null until reported
  int restart_count = 0;                                  // gang restarts so far
  std::optional<int64_t> resumed_from_step;
  std::string start_time;  // RFC 3339; empty: not started (or suspended)
  std::string completion_time;

  // Lenient: a missing or malformed field reads as its default, so a status written by an
  // older operator (or by hand) never stops the reconcile.
  static JobStatus FromJson(const nlohmann::json& status);
  nlohmann::json ToJson() const;

  const Condition* Find(const std::string& type) const;
  bool IsTrue(const std::string& type) const;
  // Succeeded or Failed is True.
  bool Finished() const;
};

}  // namespace autodist::reconcile
