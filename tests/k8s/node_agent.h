// The test stack's node: a small kubelet that runs pods of the API-server test double as local
// processes (docs/testing.md, "The node agent").
//
// It works in-process against the double's Store (a watch on pods) and Rest (status writes), not
// over HTTP: the node is not what the tests examine, so injected faults and latency — meant for
// the operator under test — never hit it, and it needs no client. It plays the scheduler too:
// an unbound pod is bound to the agent's node (spec.nodeName) before its container starts.
//
// Playing a gang scheduler (NodeAgentOptions.gang_schedulers), it binds a gang's pods only once
// the whole gang exists.
//
// Per pod it runs one container (the one named `autodist-runtime`, else the first) as
// container.command + container.args with the container's env, reports status.phase
// Pending -> Running -> Succeeded/Failed with podIP 127.0.0.1 and containerStatuses, restarts per
// the pod's restartPolicy (Always, OnFailure, Never) with a back-off. A pod deleted gracefully
// (Terminating: deletionTimestamp set) gets SIGTERM, then SIGKILL after its grace period; once
// its container has stopped the agent reports the ended state (phase Failed, or Succeeded for
// an exit 0) and deletes the pod with a grace period of 0, as the kubelet does. A pod removed
// outright is only stopped. Env references (configMapKeyRef, secretKeyRef,
// envFrom) read the store; configMap, secret and emptyDir volumes are written at their literal
// mountPath under `host_volume_root` (volumes.h) before each start of the container.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/k8s/api_server.h"
#include "tests/k8s/launch_spec.h"

namespace autodist::k8s {

class PodLogIndex;
class WatchQueue;

// A gang scheduler the node agent plays: a pod naming it (spec.schedulerName) joins the group
// its label or annotation names, and is bound only once the group's PodGroup exists and at least
// spec.minMember of the group's pods (not Terminating, not ended) exist, as Volcano and
// scheduler-plugins' coscheduling hold a gang until all of it fits. A pod naming no group is a
// gang of one.
struct GangScheduler {
  std::string group;  // of its PodGroup resource (plural podgroups)
  std::string version;
  std::string group_label;       // the pod's group is this label's value (scheduler-plugins)
  std::string group_annotation;  // or this annotation's (Volcano)

  static GangScheduler Volcano();           // scheduling.volcano.sh/v1beta1
  static GangScheduler SchedulerPlugins();  // scheduling.x-k8s.io/v1alpha1
};

struct NodeAgentOptions {
  std::string node_name = "fake-node";
  // The schedulers running in this cluster: the agent binds a pod only when its
  // spec.schedulerName is one of them. Others stay Pending with no PodScheduled condition, as
  // on a cluster where nothing serves that name.
  std::set<std::string> schedulers = {"default-scheduler"};
  // Schedulers (by name) that bind pods as gangs, besides `schedulers`.
  std::map<std::string, GangScheduler> gang_schedulers;
  // Where containers' stdout+stderr go: <log_dir>/<namespace>_<pod>_<uid>/<container>.log.
  // "" = a fresh temporary directory, removed with the agent.
  std::string log_dir;
  // image repository -> entrypoint argv, for containers without `command` (see LaunchContext).
  std::map<std::string, std::vector<std::string>> image_entrypoints;
  // Containers start from the agent's environment (PATH, HOME, LD_LIBRARY_PATH, ...) with the
  // pod's env on top; false gives them the pod's env only (plus the agent's variables below).
  bool inherit_environment = true;
  // The double's HTTP port, when served: containers get KUBERNETES_SERVICE_HOST=127.0.0.1 and
  // KUBERNETES_SERVICE_PORT=<port> (plain HTTP, unlike a cluster's HTTPS).
  int api_port = 0;
  // First restart delay; doubles with every restart up to max_restart_backoff (the kubelet:
  // 10 s up to 5 min, far too slow for tests).
  std::chrono::milliseconds restart_backoff{200};
  std::chrono::milliseconds max_restart_backoff{5000};
  // Caps a deleted pod's grace period (deletionGracePeriodSeconds, from its
  // terminationGracePeriodSeconds, default 30 s) between SIGTERM and SIGKILL.
  std::chrono::milliseconds max_grace{30000};
  // Creates the Node object (Ready, 127.0.0.1) so `kubectl get nodes` shows the agent.
  bool register_node = true;
  // Where configMap, secret and emptyDir volumes may be materialized: at the container's literal
  // mountPath, which must lie under this directory (made absolute; created as needed). "" = none:
  // a container with such a mount stays waiting in CreateContainerConfigError. Pods mounting at
  // the same path share the files: the operator under test should put the job in the path, e.g.
  // <root>/<namespace>/<job>.
  std::string host_volume_root;
  // How often a container waiting in CreateContainerConfigError (e.g. for a ConfigMap not created
  // yet) is tried again, as a kubelet re-syncs the pod.
  std::chrono::milliseconds config_retry{100};
};

class NodeAgent {
 public:
  // Starts watching pods of `api` at once. `api` must outlive the agent.
  NodeAgent(ApiServer& api, NodeAgentOptions options = {});
  // Stops every container (SIGTERM, then SIGKILL after at most a second) and the agent's thread,
  // and tells the API nothing: its pods stay as last reported, as when a node is lost.
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Rethrows what stopped the agent's thread (a bug of the double, e.g. a status write the
  // double rejected), so a test or fake-apiserver surfaces it instead of hanging.
  void CheckHealthy() const;
  size_t running_containers() const;
  const std::string& log_dir() const { return log_dir_; }

 private:
  struct Run;

  void Loop();
  void Watch();
  void HandleEvent(const nlohmann::json& event);
  void Admit(const nlohmann::json& pod);
  // True when `pod` may be bound: it names no gang scheduler, or its gang is complete.
  bool GangComplete(const nlohmann::json& pod) const;
  // Admits the pods held back for their gang whose gang is now complete.
  void AdmitWaitingGangs();
  void StartContainer(Run& run);
  // Writes the launch's volumes to the host; false (with the container waiting in
  // CreateContainerConfigError) when that fails.
  bool MaterializeVolumes(Run& run, const LaunchSpec& spec);
  // The kubelet's CreateContainerConfigError: waiting, `message` says why; tried again later.
  void ConfigError(Run& run, const std::string& message);
  void OnExit(Run& run, int exit_code, int signal, const std::string& reason,
              const std::string& message);
  // The terminated state's message for an exit: the log's tail under FallbackToLogsOnError.
  std::string TerminationMessage(const Run& run, int exit_code) const;
  // The pod is Terminating: SIGTERM now, SIGKILL after its grace period; FinishDeletion once the
  // container has stopped (at once when none runs).
  void BeginDeletion(Run& run);
  // The kubelet's last word on a Terminating pod: its ended status, then a delete with a grace
  // period of 0 (uid precondition: a pod re-created under the name is not this one).
  void FinishDeletion(Run& run);
  // The pod is gone: SIGTERM now, SIGKILL after its grace period, then forget it.
  void Terminate(Run& run);
  void PollProcesses();
  // Read-modify-write of the pod through the store, only while it is still this run's pod (same
  // uid: a pod deleted and re-created under its name is another pod). False when it is gone.
  bool UpdatePod(Run& run, const std::function<void(nlohmann::json& pod)>& change);
  void WriteStatus(Run& run);
  void RegisterNode();
  void StopAll();
  std::chrono::milliseconds Backoff(int restarts) const;

  ApiServer& api_;
  Store& store_;
  ResourceInfo pods_;
  NodeAgentOptions options_;
  LaunchContext launch_;
  std::string log_dir_;
  bool owns_log_dir_ = false;
  std::shared_ptr<WatchQueue> queue_;
  std::shared_ptr<Watcher> watcher_;
  std::map<std::string, std::unique_ptr<Run>> runs_;  // by pod uid; agent thread only
  // Filled while a re-watch replays the current pods, to find pods deleted while not watching.
  std::optional<std::set<std::string>> relisted_;
  // Unbound pods held back until their gang is complete: uid -> namespace/name.
  std::map<std::string, std::pair<std::string, std::string>> waiting_for_gang_;
  std::chrono::steady_clock::time_point next_gang_check_;
  std::shared_ptr<PodLogIndex> logs_;
  // mountPath -> the files a configMap or secret volume last wrote there (to remove stale keys).
  std::map<std::string, std::set<std::string>> volume_files_;

  mutable std::mutex mutex_;  // guards running_ and error_, read by other threads
  size_t running_ = 0;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace autodist::k8s
