#include "operator/reconcile/observed_fields.h"

#include <initializer_list>

#include "operator/reconcile/names.h"

namespace autodist::reconcile {
namespace {

constexpr const char* kLastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration";

// Copies `keys` of `from` that exist into `to` (both objects).
void CopyKeys(const nlohmann::json& from, nlohmann::json& to,
              std::initializer_list<const char*> keys) {
  if (!from.is_object()) return;
  for (const char* key : keys) {
    if (const auto found = from.find(key); found != from.end()) to[key] = *found;
  }
}

// The runtime container's status reduced to how it runs or ended; null when absent.
nlohmann::json SlimRuntimeStatus(const nlohmann::json& statuses) {
  if (!statuses.is_array()) return nullptr;
  for (const nlohmann::json& container : statuses) {
    if (!container.is_object() || container.value("name", "") != kRuntimeContainer) continue;
    nlohmann::json slim = nlohmann::json::object();
    CopyKeys(container, slim, {"name", "restartCount"});
    if (const auto state = container.find("state");
        state != container.end() && state->is_object()) {
      // waiting / running / terminated: which one it is, and a terminated container's exit,
      // when it ended and the last line of its termination message (up to 4 KB, of which the
      // MemberFailed Event quotes that line). The rest (container id, start) is not read.
      nlohmann::json& slim_state = slim["state"] = nlohmann::json::object();
      for (const auto& [kind, detail] : state->items()) {
        nlohmann::json& entry = slim_state[kind] = nlohmann::json::object();
        CopyKeys(detail, entry, {"exitCode", "reason", "finishedAt"});
        if (kind == "terminated" && detail.is_object() && detail.contains("message") &&
            detail["message"].is_string()) {
          entry["message"] = LastLine(detail["message"].get<std::string>());
        }
      }
    }
    return slim;
  }
  return nullptr;
}

}  // namespace

std::string LastLine(const std::string& text) {
  const size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const size_t newline = text.find_last_of('\n', end);
  const size_t begin = newline == std::string::npos ? 0 : newline + 1;
  std::string line = text.substr(begin, end + 1 - begin);
  if (line.size() > kLastLineBytes) line = line.substr(0, kLastLineBytes - 3) + "...";
  return line;
}

nlohmann::json SlimToMetadata(const nlohmann::json& object) {
  nlohmann::json slim = nlohmann::json::object();
  CopyKeys(object, slim, {"apiVersion", "kind"});
  nlohmann::json& metadata = slim["metadata"] = nlohmann::json::object();
  if (const auto found = object.find("metadata"); found != object.end()) {
    CopyKeys(*found, metadata,
             {"name", "namespace", "uid", "resourceVersion", "generation", "labels",
              "ownerReferences", "deletionTimestamp"});
  }
  return slim;
}

nlohmann::json SlimPod(const nlohmann::json& pod) {
  nlohmann::json slim = SlimToMetadata(pod);
  if (const auto metadata = pod.find("metadata"); metadata != pod.end()) {
    CopyKeys(*metadata, slim["metadata"], {"creationTimestamp"});
  }
  if (const auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    slim["spec"] = nlohmann::json::object();
    CopyKeys(*spec, slim["spec"], {"schedulerName", "nodeName"});
  }
  const auto status = pod.find("status");
  if (status == pod.end() || !status->is_object()) return slim;
  nlohmann::json& slim_status = slim["status"] = nlohmann::json::object();
  CopyKeys(*status, slim_status, {"phase", "reason"});
  if (const auto conditions = status->find("conditions");
      conditions != status->end() && conditions->is_array()) {
    for (const nlohmann::json& condition : *conditions) {
      if (condition.is_object() && condition.value("type", "") == "PodScheduled") {
        slim_status["conditions"] = nlohmann::json::array({condition});
      }
    }
  }
  if (const auto statuses = status->find("containerStatuses"); statuses != status->end()) {
    nlohmann::json runtime = SlimRuntimeStatus(*statuses);
    slim_status["containerStatuses"] = nlohmann::json::array();
    if (!runtime.is_null()) slim_status["containerStatuses"].push_back(std::move(runtime));
  }
  return slim;
}

nlohmann::json SlimJob(const nlohmann::json& job) {
  nlohmann::json slim = job;
  const auto metadata = slim.find("metadata");
  if (metadata == slim.end() || !metadata->is_object()) return slim;
  metadata->erase("managedFields");
  if (const auto annotations = metadata->find("annotations");
      annotations != metadata->end() && annotations->is_object()) {
    annotations->erase(kLastAppliedAnnotation);
    if (annotations->empty()) metadata->erase(annotations);
  }
  return slim;
}

}  // namespace autodist::reconcile
