#include "tests/k8s/pod_status.h"

#include <algorithm>
#include <thread>

#include "tests/k8s/clock.h"

namespace autodist::k8s {
namespace {

// A condition keeps its lastTransitionTime until its status changes, as the kubelet's do.
nlohmann::json Condition(const nlohmann::json& previous, const std::string& type, bool status,
                         const std::string& reason, const std::string& now) {
  const std::string value = status ? "True" : "False";
  std::string since = now;
  for (const auto& c : previous) {
    if (c.value("type", "") == type && c.value("status", "") == value) {
      since = c.value("lastTransitionTime", now);
    }
  }
  nlohmann::json out = {
      {"type", type}, {"status", value}, {"lastProbeTime", nullptr}, {"lastTransitionTime", since}};
  if (!reason.empty()) out["reason"] = reason;
  return out;
}

}  // namespace

nlohmann::json TerminatedState(int exit_code, int signal, const std::string& started_at,
                               const std::string& container_id, const std::string& reason,
                               const std::string& message) {
  nlohmann::json t = {{"exitCode", exit_code},
                      {"reason", !reason.empty()  ? reason
                                 : exit_code == 0 ? "Completed"
                                                  : "Error"},
                      {"startedAt", started_at},
                      {"finishedAt", NowRfc3339()}};
  if (signal != 0) t["signal"] = signal;
  if (!message.empty()) t["message"] = message;
  if (!container_id.empty()) t["containerID"] = container_id;
  return {{"terminated", t}};
}

nlohmann::json BuildPodStatus(const nlohmann::json& pod, const PodView& view) {
  const std::string now = NowRfc3339();
  const auto& old = pod.value("status", nlohmann::json::object());
  const auto& previous = old.value("conditions", nlohmann::json::array());
  const auto& c = view.container;
  const bool running = c.state.contains("running");
  const bool terminal = view.phase == "Succeeded" || view.phase == "Failed";
  const std::string not_ready = terminal ? "PodCompleted" : "ContainersNotReady";

  nlohmann::json statuses = nlohmann::json::array();
  const auto& pod_spec = pod.value("spec", nlohmann::json::object());
  for (const auto& spec : pod_spec.value("containers", nlohmann::json::array())) {
    const std::string name = spec.value("name", "");
    nlohmann::json s = {{"name", name},
                        {"image", spec.value("image", "")},
                        {"imageID", ""},
                        {"restartCount", 0},
                        {"ready", false},
                        {"started", false},
                        {"lastState", nlohmann::json::object()}};
    if (name == c.name) {
      s["restartCount"] = c.restart_count;
      s["ready"] = running;
      s["started"] = running;
      s["state"] = c.state;
      s["lastState"] = c.last_state;
      if (!c.container_id.empty()) s["containerID"] = c.container_id;
    } else {
      s["state"] = {
          {"waiting",
           {{"reason", "NotRunByNodeAgent"},
            {"message", "the test node agent runs one container per pod: '" + c.name + "'"}}}};
    }
    statuses.push_back(s);
  }

  nlohmann::json status = {
      {"phase", view.phase},
      {"conditions",
       {Condition(previous, "PodReadyToStartContainers", !view.pod_ip.empty(), "", now),
        Condition(previous, "Initialized", true, "", now),
        Condition(previous, "Ready", running, running ? "" : not_ready, now),
        Condition(previous, "ContainersReady", running, running ? "" : not_ready, now),
        Condition(previous, "PodScheduled", true, "", now)}},
      {"qosClass", "BestEffort"},
      {"containerStatuses", statuses}};
  if (!view.pod_ip.empty()) {
    status["hostIP"] = view.pod_ip;
    status["hostIPs"] = {{{"ip", view.pod_ip}}};
    status["podIP"] = view.pod_ip;
    status["podIPs"] = {{{"ip", view.pod_ip}}};
  }
  if (!view.start_time.empty()) status["startTime"] = view.start_time;
  return status;
}

nlohmann::json NodeObject(const std::string& name, const std::string& address) {
  const std::string now = NowRfc3339();
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  const nlohmann::json resources = {
      {"cpu", std::to_string(cpus)}, {"memory", "64Gi"}, {"pods", "110"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"uid", NewUid()},
            {"creationTimestamp", now},
            {"labels", {{"kubernetes.io/hostname", name}, {"kubernetes.io/os", "linux"}}}}},
          {"spec", nlohmann::json::object()},
          {"status",
           {{"capacity", resources},
            {"allocatable", resources},
            {"addresses",
             {{{"type", "InternalIP"}, {"address", address}},
              {{"type", "Hostname"}, {"address", name}}}},
            {"conditions",
             {{{"type", "Ready"},
               {"status", "True"},
               {"reason", "KubeletReady"},
               {"message", "the test node agent is running"},
               {"lastHeartbeatTime", now},
               {"lastTransitionTime", now}}}},
            {"nodeInfo", {{"kubeletVersion", "v1.32.0-fake"}}}}}};
}

bool PodEnded(const nlohmann::json& pod) {
  const std::string phase = pod.value("status", nlohmann::json::object()).value("phase", "");
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace autodist::k8s
