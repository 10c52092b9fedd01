// What the node agent reports, in the kubelet's shapes: a pod's status (phase, conditions with
// lastTransitionTime kept while a condition's status holds, pod and host IPs, startTime,
// containerStatuses with running / terminated / waiting states) and its Node object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace autodist::k8s {

// What the agent knows about the one container it runs.
struct ContainerView {
  std::string name;
  std::string image;
  std::string container_id;  // "fake-kubelet://<pid>" once started
  int restart_count = 0;
  // One of {"waiting": {reason, message}}, {"running": {startedAt}},
  // {"terminated": {exitCode, signal, reason, message, startedAt, finishedAt, containerID}}.
  nlohmann::json state;
  nlohmann::json last_state = nlohmann::json::object();
};

struct PodView {
  std::string phase;  // Pending, Running, Succeeded, Failed
  std::string start_time;
  std::string pod_ip;
  ContainerView container;
};

// The full status for `pod` (its current JSON, whose status supplies the previous conditions).
// The pod's other containers, which the agent does not run, are reported waiting with reason
// NotRunByNodeAgent.
nlohmann::json BuildPodStatus(const nlohmann::json& pod, const PodView& view);

// {"terminated": {...}} for an exit of the container: reason Completed (0), Error, or the one
// given (StartError).
nlohmann::json TerminatedState(int exit_code, int signal, const std::string& started_at,
                               const std::string& container_id, const std::string& reason = "",
                               const std::string& message = "");

// True once the pod's status.phase is Succeeded or Failed: nothing runs in it any more.
bool PodEnded(const nlohmann::json& pod);

// The Node the agent registers: Ready, with `address` as its InternalIP and the host's CPUs.
nlohmann::json NodeObject(const std::string& name, const std::string& address);

}  // namespace autodist::k8s
