#include "operator/reconcile/observed_pods.h"

#include <fmt/format.h>

#include <charconv>

#include "operator/reconcile/object_meta.h"
#include "operator/reconcile/observed_fields.h"

namespace autodist::reconcile {
namespace {

const nlohmann::json& Field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  const auto found = object.find(key);
  return found == object.end() ? kNull : *found;
}

std::string StringOf(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::optional<int> IntOf(const std::string& text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// The runtime container's status, null when the kubelet reported none yet.
const nlohmann::json& RuntimeStatus(const nlohmann::json& status) {
  static const nlohmann::json kNull;
  const nlohmann::json& statuses = Field(status, "containerStatuses");
  if (!statuses.is_array()) return kNull;
  for (const nlohmann::json& container : statuses) {
    if (StringOf(Field(container, "name")) == kRuntimeContainer) return container;
  }
  return kNull;
}

void ReadPhase(const nlohmann::json& status, ObservedPod& pod) {
  const nlohmann::json& terminated = Field(Field(RuntimeStatus(status), "state"), "terminated");
  if (terminated.is_object()) {
    const nlohmann::json& code = Field(terminated, "exitCode");
    pod.exit_code = code.is_number_integer() ? code.get<int>() : 0;
    pod.phase = *pod.exit_code == 0 ? MemberPhase::kPodSucceeded : MemberPhase::kPodFailed;
    pod.reason = StringOf(Field(terminated, "reason"));
    pod.finished_at = StringOf(Field(terminated, "finishedAt"));
    pod.last_line = LastLine(StringOf(Field(terminated, "message")));
    return;
  }
  const std::string phase = StringOf(Field(status, "phase"));
  pod.reason = StringOf(Field(status, "reason"));  // Evicted, NodeLost, ...
  if (phase == "Running") {
    pod.phase = MemberPhase::kPodRunning;
  } else if (phase == "Succeeded") {
    pod.phase = MemberPhase::kPodSucceeded;
  } else if (phase == "Failed") {
    pod.phase = MemberPhase::kPodFailed;  // no container status: evicted or never started
  } else {
    pod.phase = MemberPhase::kPodPending;  // Pending, Unknown (node unreachable) or not reported
  }
}

void ReadScheduling(const nlohmann::json& object, ObservedPod& pod) {
  const nlohmann::json& spec = Field(object, "spec");
  if (const std::string scheduler = StringOf(Field(spec, "schedulerName")); !scheduler.empty()) {
    pod.scheduler = scheduler;
  }
  pod.scheduled = !StringOf(Field(spec, "nodeName")).empty();
  const nlohmann::json& conditions = Field(Field(object, "status"), "conditions");
  if (!conditions.is_array()) return;
  for (const nlohmann::json& condition : conditions) {
    if (StringOf(Field(condition, "type")) != "PodScheduled") continue;
    const std::string status = StringOf(Field(condition, "status"));
    pod.scheduled = pod.scheduled || status == "True";
    if (status == "False") pod.unschedulable = StringOf(Field(condition, "message"));
  }
}

}  // namespace

std::vector<ObservedPod> ObservePods(const std::vector<nlohmann::json>& pods, const JobRef& job) {
  std::vector<ObservedPod> observed;
  for (const nlohmann::json& object : pods) {
    if (!IsControlledBy(object, job)) continue;
    const nlohmann::json& metadata = Field(object, "metadata");
    const nlohmann::json& labels = Field(metadata, "labels");
    const std::string type = StringOf(Field(labels, kReplicaTypeLabel));
    const std::optional<int> index = IntOf(StringOf(Field(labels, kReplicaIndexLabel)));
    if (!index.has_value() ||
        (type != RoleLabel(Role::kWorker) && type != RoleLabel(Role::kParameterServer))) {
      continue;
    }
    ObservedPod pod;
    pod.name = StringOf(Field(metadata, "name"));
    pod.uid = StringOf(Field(metadata, "uid"));
    pod.role = type == RoleLabel(Role::kWorker) ? Role::kWorker : Role::kParameterServer;
    pod.index = *index;
    pod.generation = IntOf(StringOf(Field(labels, kRestartGenerationLabel))).value_or(0);
    pod.terminating = !Field(metadata, "deletionTimestamp").is_null();
    pod.created = StringOf(Field(metadata, "creationTimestamp"));
    ReadScheduling(object, pod);
    ReadPhase(Field(object, "status"), pod);
    observed.push_back(std::move(pod));
  }
  return observed;
}

std::string DescribeEnd(const ObservedPod& pod) {
  std::string text =
      pod.exit_code.has_value() ? fmt::format("exit code {}", *pod.exit_code) : "no exit code";
  if (!pod.reason.empty()) text += fmt::format(" ({})", pod.reason);
  return text;
}

}  // namespace autodist::reconcile
