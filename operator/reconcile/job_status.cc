#include "operator/reconcile/job_status.h"

#include "operator/reconcile/conditions.h"

namespace autodist::reconcile {
namespace {

std::string StringAt(const nlohmann::json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

std::optional<int64_t> IntAt(const nlohmann::json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number_integer()) return std::nullopt;
  return found->get<int64_t>();
}

nlohmann::json ValueAt(const nlohmann::json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_object() ? *found : nlohmann::json();
}

}  // namespace

JobStatus JobStatus::FromJson(const nlohmann::json& status) {
  JobStatus out;
  if (!status.is_object()) return out;
  out.observed_generation = IntAt(status, "observedGeneration");
  out.state = StringAt(status, "state");
  if (const auto conditions = status.find("conditions");
      conditions != status.end() && conditions->is_array()) {
    for (const nlohmann::json& entry : *conditions) {
      if (!entry.is_object() || StringAt(entry, "type").empty()) continue;
      out.conditions.push_back(Condition{StringAt(entry, "type"), StringAt(entry, "status"),
                                         StringAt(entry, "reason"), StringAt(entry, "message"),
                                         StringAt(entry, "lastTransitionTime"),
                                         IntAt(entry, "observedGeneration")});
    }
  }
  if (const auto replicas = status.find("replicaStatuses");
      replicas != status.end() && replicas->is_object()) {
    for (const auto& [role, counts] : replicas->items()) {
      if (!counts.is_object()) continue;
      out.replica_statuses[role] =
          ReplicaStatus{static_cast<int>(IntAt(counts, "active").value_or(0)),
                        static_cast<int>(IntAt(counts, "succeeded").value_or(0)),
                        static_cast<int>(IntAt(counts, "failed").value_or(0))};
    }
  }
  out.strategy = ValueAt(status, "strategy");
  out.progress = ValueAt(status, "progress");
  out.restart_count = static_cast<int>(IntAt(status, "restartCount").value_or(0));
  out.resumed_from_step = IntAt(status, "resumedFromStep");
  out.start_time = StringAt(status, "startTime");
  out.completion_time = StringAt(status, "completionTime");
  return out;
}

nlohmann::json JobStatus::ToJson() const {
  nlohmann::json out = nlohmann::json::object();
  if (observed_generation.has_value()) out["observedGeneration"] = *observed_generation;
  if (!state.empty()) out["state"] = state;
  nlohmann::json list = nlohmann::json::array();
  for (const Condition& condition : conditions) {
    nlohmann::json entry = {{"type", condition.type},
                            {"status", condition.status},
                            {"reason", condition.reason},
                            {"message", condition.message},
                            {"lastTransitionTime", condition.last_transition_time}};
    if (condition.observed_generation.has_value()) {
      entry["observedGeneration"] = *condition.observed_generation;
    }
    list.push_back(std::move(entry));
  }
  out["conditions"] = std::move(list);
  if (!replica_statuses.empty()) {
    nlohmann::json replicas = nlohmann::json::object();
    for (const auto& [role, counts] : replica_statuses) {
      replicas[role] = {
          {"active", counts.active}, {"succeeded", counts.succeeded}, {"failed", counts.failed}};
    }
    out["replicaStatuses"] = std::move(replicas);
  }
  if (!strategy.is_null()) out["strategy"] = strategy;
  if (!progress.is_null()) out["progress"] = progress;
  out["restartCount"] = restart_count;
  if (resumed_from_step.has_value()) out["resumedFromStep"] = *resumed_from_step;
  if (!start_time.empty()) out["startTime"] = start_time;
  if (!completion_time.empty()) out["completionTime"] = completion_time;
  return out;
}

const Condition* JobStatus::Find(const std::string& type) const {
  for (const Condition& condition : conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

bool JobStatus::IsTrue(const std::string& type) const {
  const Condition* condition = Find(type);
  return condition != nullptr && condition->status == "True";
}

bool JobStatus::Finished() const { return IsTrue(kSucceeded) || IsTrue(kFailed); }

}  // namespace autodist::reconcile
