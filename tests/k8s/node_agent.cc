#include "tests/k8s/node_agent.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/k8s/api_error.h"
#include "tests/k8s/child_process.h"
#include "tests/k8s/clock.h"
#include "tests/k8s/pod_logs.h"
#include "tests/k8s/pod_status.h"
#include "tests/k8s/watch_queue.h"

namespace autodist::k8s {

using Clock = std::chrono::steady_clock;

struct NodeAgent::Run {
  std::string uid, ns, name;
  nlohmann::json pod;  // as last written or seen
  PodView view;
  std::optional<ChildProcess> process;
  bool ever_started = false;
  bool done = false;         // terminal phase reported; nothing more to do until deletion
  bool terminating = false;  // deletionTimestamp seen: stop, report, delete
  bool deleted = false;      // the pod is gone: kill, then forget
  std::optional<Clock::time_point> restart_at;
  std::optional<Clock::time_point> retry_at;  // after a CreateContainerConfigError
  std::optional<Clock::time_point> kill_at;
  std::string log_path;  // the running container's log

  std::string Key() const { return ns + "/" + name; }
};

namespace {

const nlohmann::json& Meta(const nlohmann::json& object) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  return object.contains("metadata") ? object["metadata"] : kEmpty;
}

std::string MakeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "fake-kubelet-XXXXXX").string();
  AD_CHECK(::mkdtemp(pattern.data()) != nullptr, kFailedPrecondition,
           "node agent: cannot create a log directory under {}",
           std::filesystem::temp_directory_path().string());
  return pattern;
}

// The kubelet's termination message for a container that exited: with terminationMessagePolicy
// FallbackToLogsOnError and a failure, the tail of its log (the last 80 lines, at most 2048
// bytes); the agent mounts no termination-log file, so that is the only source.
std::string TailForTerminationMessage(const std::string& log_path) {
  std::ifstream in(log_path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > 2048) text = text.substr(text.size() - 2048);
  size_t lines = 0;
  for (size_t at = text.size(); at > 0; --at) {
    if (text[at - 1] == '\n' && at != text.size() && ++lines == 80) return text.substr(at);
  }
  return text;
}

}  // namespace

NodeAgent::NodeAgent(ApiServer& api, NodeAgentOptions options)
    : api_(api),
      store_(api.store()),
      options_(std::move(options)),
      queue_(std::make_shared<WatchQueue>()),
      logs_(std::make_shared<PodLogIndex>()) {
  auto pods = store_.FindResource("", "v1", "pods");
  AD_CHECK(pods != nullptr, kInternal, "node agent: the double serves no core/v1 pods");
  pods_ = *pods;
  launch_.node_name = options_.node_name;
  launch_.image_entrypoints = options_.image_entrypoints;
  if (options_.api_port > 0) {
    launch_.extra_env = {{"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
                         {"KUBERNETES_SERVICE_PORT", std::to_string(options_.api_port)}};
  }
  if (!options_.host_volume_root.empty()) {
    launch_.host_volume_root =
        std::filesystem::absolute(options_.host_volume_root).lexically_normal().string();
  }
  // The agent reads ConfigMaps and Secrets straight from the store, like the pods.
  launch_.lookup = [store = &store_](const std::string& resource, const std::string& ns,
                                     const std::string& name) -> nlohmann::json {
    auto info = store->FindResource("", "v1", resource);
    const ObjectPtr object = info ? store->Get(*info, ns, name) : nullptr;
    return object == nullptr ? nlohmann::json() : object->object;
  };
  log_dir_ = options_.log_dir;
  if (log_dir_.empty()) {
    log_dir_ = MakeTempDir();
    owns_log_dir_ = true;
  }
  api_.set_pod_log_reader(
      [logs = logs_](const std::string& ns, const std::string& pod, const std::string& container) {
        return logs->Read(ns + "/" + pod, container);
      });
  // Before the thread: the node exists once the agent does.
  if (options_.register_node) RegisterNode();
  thread_ = std::thread([this] { Loop(); });
}

NodeAgent::~NodeAgent() {
  queue_->Stop();
  thread_.join();
  if (watcher_) watcher_->Stop();
  api_.set_pod_log_reader(nullptr);
  if (owns_log_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(log_dir_, ec);
  }
}

void NodeAgent::CheckHealthy() const {
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(error_);
}

size_t NodeAgent::running_containers() const {
  std::lock_guard lock(mutex_);
  return running_;
}

std::chrono::milliseconds NodeAgent::Backoff(int restarts) const {
  auto delay = options_.restart_backoff;
  for (int i = 0; i < restarts && delay < options_.max_restart_backoff; ++i) delay *= 2;
  return std::min(delay, options_.max_restart_backoff);
}

void NodeAgent::Loop() {
  try {
    Watch();
    while (true) {
      // Exits are polled (waitpid) rather than signalled: SIGCHLD belongs to the host process.
      WatchQueue::Batch batch = queue_->Take(std::chrono::milliseconds(10));
      if (batch.stopping) break;
      for (const auto& event : batch.events) HandleEvent(event);
      // A gang completes with a pod's event; its PodGroup may come later, hence the second.
      if (!waiting_for_gang_.empty() &&
          (!batch.events.empty() || Clock::now() >= next_gang_check_)) {
        AdmitWaitingGangs();
        next_gang_check_ = Clock::now() + std::chrono::seconds(1);
      }
      if (batch.closed) Watch();  // dropped (fault injection, slow watcher): watch again
      PollProcesses();
    }
  } catch (const Error&) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
  } catch (const std::exception& e) {
    // A filesystem or JSON failure: still one autodist::Error for whoever checks the agent.
    std::lock_guard lock(mutex_);
    error_ = std::make_exception_ptr(
        Error(ErrorCode::kInternal, std::string("node agent: ") + e.what()));
  }
  StopAll();
}

void NodeAgent::Watch() {
  queue_->Reset();
  // A fresh watch replays every pod; those we run but it does not show were deleted meanwhile.
  relisted_.emplace();
  WatchStart start;
  start.mode = WatchStart::kNow;
  start.initial_events_end_bookmark = true;
  WatchOptions options;
  options.bookmark_api_version = "v1";
  options.bookmark_kind = "Pod";
  watcher_ = store_.Watch(pods_, start, options, queue_);
}

void NodeAgent::HandleEvent(const nlohmann::json& event) {
  const std::string type = event.value("type", "");
  const nlohmann::json& object = event.contains("object") ? event["object"] : nlohmann::json();
  if (type == "BOOKMARK") {
    if (relisted_ && Meta(object).contains("annotations")) {
      for (auto& [uid, run] : runs_) {
        if (!relisted_->contains(uid)) Terminate(*run);
      }
      relisted_.reset();
    }
    return;
  }
  if (type == "ERROR") return;  // the watch ends next; Loop watches again
  const std::string uid = Meta(object).value("uid", "");
  if (relisted_) relisted_->insert(uid);
  auto it = runs_.find(uid);
  if (type == "DELETED") {
    if (it != runs_.end()) Terminate(*it->second);
    return;
  }
  if (it == runs_.end()) {
    Admit(object);
    return;
  }
  Run& run = *it->second;
  if (!run.deleted) run.pod = object;
  if (Meta(object).contains("deletionTimestamp")) BeginDeletion(run);
}

void NodeAgent::Admit(const nlohmann::json& pod) {
  const auto& meta = Meta(pod);
  const auto& spec = pod.value("spec", nlohmann::json::object());
  const std::string node = spec.value("nodeName", "");
  if (PodEnded(pod) || meta.contains("deletionTimestamp")) return;
  if (!node.empty() && node != options_.node_name) return;  // another node's pod
  const std::string scheduler = spec.value("schedulerName", "");
  if (node.empty() && !options_.schedulers.contains(scheduler) &&
      !options_.gang_schedulers.contains(scheduler)) {
    return;
  }
  if (node.empty() && !GangComplete(pod)) {
    waiting_for_gang_[meta.value("uid", "")] = {meta.value("namespace", ""),
                                                meta.value("name", "")};
    return;
  }

  auto run = std::make_unique<Run>();
  run->uid = meta.value("uid", "");
  run->ns = meta.value("namespace", "");
  run->name = meta.value("name", "");
  run->pod = pod;
  run->view.phase = "Pending";
  try {
    run->view.container.name = SelectContainer(pod).value("name", "");
    run->view.container.image = SelectContainer(pod).value("image", "");
  } catch (const Error&) {
    // No containers: reported by StartContainer through MakeLaunchSpec's message.
  }
  // The scheduler's part: bind the pod to this node.
  const bool bound =
      UpdatePod(*run, [&](nlohmann::json& p) { p["spec"]["nodeName"] = options_.node_name; });
  if (!bound) return;
  Run& added = *run;
  runs_[added.uid] = std::move(run);
  StartContainer(added);
}

GangScheduler GangScheduler::Volcano() {
  return {"scheduling.volcano.sh", "v1beta1", "", "scheduling.k8s.io/group-name"};
}

GangScheduler GangScheduler::SchedulerPlugins() {
  return {"scheduling.x-k8s.io", "v1alpha1", "scheduling.x-k8s.io/pod-group", ""};
}

namespace {

// The gang `pod` belongs to under `gang` ("" when it names none).
std::string GroupOf(const nlohmann::json& pod, const GangScheduler& gang) {
  const nlohmann::json& meta = Meta(pod);
  const auto value = [&](const char* field, const std::string& key) -> std::string {
    if (key.empty() || !meta.contains(field) || !meta[field].is_object()) return "";
    const auto found = meta[field].find(key);
    return found != meta[field].end() && found->is_string() ? found->get<std::string>() : "";
  };
  const std::string labelled = value("labels", gang.group_label);
  return labelled.empty() ? value("annotations", gang.group_annotation) : labelled;
}

}  // namespace

bool NodeAgent::GangComplete(const nlohmann::json& pod) const {
  const std::string scheduler =
      pod.value("spec", nlohmann::json::object()).value("schedulerName", "");
  const auto gang = options_.gang_schedulers.find(scheduler);
  if (gang == options_.gang_schedulers.end()) return true;
  const std::string group = GroupOf(pod, gang->second);
  if (group.empty()) return true;
  const std::string ns = Meta(pod).value("namespace", "");
  const auto pod_groups =
      store_.FindResource(gang->second.group, gang->second.version, "podgroups");
  const ObjectPtr pod_group = pod_groups ? store_.Get(*pod_groups, ns, group) : nullptr;
  if (pod_group == nullptr) return false;  // the scheduler waits for its PodGroup
  const int64_t min_member =
      pod_group->object.value("spec", nlohmann::json::object()).value("minMember", int64_t{1});
  int64_t members = 0;
  for (const ObjectPtr& other : store_.ListAll(pods_, ns)) {
    if (Meta(other->object).contains("deletionTimestamp") || PodEnded(other->object) ||
        GroupOf(other->object, gang->second) != group) {
      continue;
    }
    ++members;
  }
  return members >= min_member;
}

void NodeAgent::AdmitWaitingGangs() {
  std::vector<nlohmann::json> ready;
  for (auto it = waiting_for_gang_.begin(); it != waiting_for_gang_.end();) {
    const ObjectPtr pod = store_.Get(pods_, it->second.first, it->second.second);
    const bool same = pod != nullptr && Meta(pod->object).value("uid", "") == it->first;
    if (!same ||
        !pod->object.value("spec", nlohmann::json::object()).value("nodeName", "").empty() ||
        Meta(pod->object).contains("deletionTimestamp")) {
      it = waiting_for_gang_.erase(it);  // gone, bound elsewhere, or going
    } else if (GangComplete(pod->object)) {
      ready.push_back(pod->object);
      it = waiting_for_gang_.erase(it);
    } else {
      ++it;
    }
  }
  for (const nlohmann::json& pod : ready) Admit(pod);
}

bool NodeAgent::UpdatePod(Run& run, const std::function<void(nlohmann::json& pod)>& change) {
  bool ours = false;
  try {
    const ObjectPtr stored = store_.Mutate(
        pods_, run.ns, run.name, [&](const ObjectPtr& current) -> std::optional<nlohmann::json> {
          if (current == nullptr || Meta(current->object).value("uid", "") != run.uid) {
            return std::nullopt;
          }
          ours = true;
          nlohmann::json next = current->object;
          change(next);
          if (next == current->object) return std::nullopt;
          return next;
        });
    if (ours) run.pod = stored->object;
  } catch (const ApiError& e) {
    if (e.http_code() != 404) throw;  // the namespace went away with the pod
  }
  return ours;
}

void NodeAgent::WriteStatus(Run& run) {
  if (run.deleted) return;
  const bool present =
      UpdatePod(run, [&](nlohmann::json& pod) { pod["status"] = BuildPodStatus(pod, run.view); });
  if (!present) Terminate(run);
}

void NodeAgent::ConfigError(Run& run, const std::string& message) {
  // What the kubelet does when it cannot build a container's config: wait, say why, and try
  // again on a later pass (the ConfigMap may be created meanwhile).
  run.view.container.state = {
      {"waiting", {{"reason", "CreateContainerConfigError"}, {"message", message}}}};
  run.retry_at = Clock::now() + options_.config_retry;
  WriteStatus(run);
}

bool NodeAgent::MaterializeVolumes(Run& run, const LaunchSpec& spec) {
  for (const auto& mount : spec.mounts) {
    try {
      MaterializeMount(mount, volume_files_[mount.mount_path]);
    } catch (const std::exception& e) {  // autodist::Error or std::filesystem::filesystem_error
      ConfigError(run, "pod " + run.Key() + ": container '" + spec.container + "': volume '" +
                           mount.volume + "' at '" + mount.mount_path + "': " + e.what());
      return false;
    }
  }
  return true;
}

void NodeAgent::StartContainer(Run& run) {
  run.restart_at.reset();
  run.retry_at.reset();
  ContainerView& c = run.view.container;
  LaunchSpec spec;
  try {
    spec = MakeLaunchSpec(run.pod, launch_);
  } catch (const Error& e) {
    ConfigError(run, e.what());
    return;
  }
  // Right before each start, so a restarted container sees the volumes' current content.
  if (!MaterializeVolumes(run, spec)) return;
  const std::string dir = log_dir_ + "/" + run.ns + "_" + run.name + "_" + run.uid;
  std::filesystem::create_directories(dir);
  const std::string log = dir + "/" + spec.container + ".log";
  logs_->Set(run.Key(), spec.container, log);
  run.log_path = log;
  run.view.pod_ip = launch_.pod_ip;
  if (run.view.start_time.empty()) run.view.start_time = NowRfc3339();
  const std::string started = NowRfc3339();
  try {
    run.process.emplace(ChildProcess::Start(spec, log, options_.inherit_environment));
  } catch (const Error& e) {
    // The runtime's StartError: exit code 128, the exec failure as the message.
    OnExit(run, 128, 0, "StartError", e.what());
    return;
  }
  run.ever_started = true;
  c.container_id = "fake-kubelet://" + std::to_string(run.process->pid());
  c.state = {{"running", {{"startedAt", started}}}};
  run.view.phase = "Running";
  WriteStatus(run);
}

std::string NodeAgent::TerminationMessage(const Run& run, int exit_code) const {
  if (exit_code == 0 || run.log_path.empty()) return "";
  const nlohmann::json* container = nullptr;
  try {
    container = &SelectContainer(run.pod);
  } catch (const Error&) {
    return "";
  }
  if (container->value("terminationMessagePolicy", "File") != "FallbackToLogsOnError") return "";
  return TailForTerminationMessage(run.log_path);
}

void NodeAgent::OnExit(Run& run, int exit_code, int signal, const std::string& reason,
                       const std::string& message) {
  ContainerView& c = run.view.container;
  const std::string started =
      c.state.contains("running") ? c.state["running"].value("startedAt", "") : NowRfc3339();
  const nlohmann::json terminated =
      TerminatedState(exit_code, signal, started, c.container_id, reason, message);
  const std::string policy =
      run.pod.value("spec", nlohmann::json::object()).value("restartPolicy", "Always");
  // A Terminating pod's container is not restarted: it was asked to stop.
  const bool restart =
      !run.terminating && (policy == "Always" || (policy == "OnFailure" && exit_code != 0));
  if (restart) {
    const auto delay = Backoff(c.restart_count);
    c.last_state = terminated;
    c.state = {{"waiting",
                {{"reason", "CrashLoopBackOff"},
                 {"message", "back-off " + std::to_string(delay.count()) +
                                 "ms restarting failed container=" + c.name + " pod=" + run.name +
                                 "_" + run.ns + "(" + run.uid + ")"}}}};
    run.view.phase = run.ever_started ? "Running" : "Pending";
    run.restart_at = Clock::now() + delay;
  } else {
    c.state = terminated;
    run.view.phase = exit_code == 0 ? "Succeeded" : "Failed";
    run.done = true;
  }
  WriteStatus(run);
}

void NodeAgent::BeginDeletion(Run& run) {
  if (run.deleted || run.terminating) return;
  run.terminating = true;
  run.restart_at.reset();
  run.retry_at.reset();
  if (!run.process || !run.process->running()) {
    FinishDeletion(run);
    return;
  }
  run.process->Signal(SIGTERM);
  const nlohmann::json& meta = Meta(run.pod);
  const long seconds = meta.value(
      "deletionGracePeriodSeconds",
      run.pod.value("spec", nlohmann::json::object()).value("terminationGracePeriodSeconds", 30L));
  run.kill_at = Clock::now() + std::min<std::chrono::milliseconds>(std::chrono::seconds(seconds),
                                                                   options_.max_grace);
}

void NodeAgent::FinishDeletion(Run& run) {
  // A container that never ended on its own (a restart pending, or waiting for its config)
  // reports the state it was left in; the pod's phase ends either way.
  if (!run.done) {
    if (run.view.phase != "Succeeded") run.view.phase = "Failed";
    WriteStatus(run);
  }
  DeleteOptions last;
  last.uid_precondition = run.uid;
  last.grace_period_seconds = 0;
  try {
    store_.Delete(pods_, run.ns, run.name, last);
  } catch (const ApiError& e) {
    // Gone already (404), or the name holds another pod now (409): this one is gone either way.
    if (e.http_code() != 404 && e.http_code() != 409) throw;
  }
  Terminate(run);
}

void NodeAgent::Terminate(Run& run) {
  if (run.deleted) return;
  run.deleted = true;
  run.restart_at.reset();
  run.retry_at.reset();
  logs_->Erase(run.Key());
  if (run.process && run.process->running()) {
    run.process->Signal(SIGTERM);
    const long seconds =
        run.pod.value("spec", nlohmann::json::object()).value("terminationGracePeriodSeconds", 30);
    run.kill_at = Clock::now() + std::min<std::chrono::milliseconds>(std::chrono::seconds(seconds),
                                                                     options_.max_grace);
  }
}

void NodeAgent::PollProcesses() {
  const auto now = Clock::now();
  size_t running = 0;
  for (auto it = runs_.begin(); it != runs_.end();) {
    Run& run = *it->second;
    if (run.process) {
      if (auto exit = run.process->Poll()) {
        run.process.reset();
        if (!run.deleted) {
          OnExit(run, exit->exit_code, exit->signal, "", TerminationMessage(run, exit->exit_code));
        }
        if (run.terminating && !run.deleted) FinishDeletion(run);
      } else if (run.kill_at && now >= *run.kill_at) {
        run.process->Signal(SIGKILL);  // the grace period is over
        run.kill_at.reset();
      }
    }
    if (!run.deleted && run.restart_at && now >= *run.restart_at) {
      ++run.view.container.restart_count;
      StartContainer(run);
    } else if (!run.deleted && run.retry_at && now >= *run.retry_at) {
      StartContainer(run);  // not a restart: the container never ran this time
    }
    if (run.deleted && !run.process) {
      it = runs_.erase(it);
      continue;
    }
    running += run.process && run.process->running() ? 1 : 0;
    ++it;
  }
  std::lock_guard lock(mutex_);
  running_ = running;
}

void NodeAgent::RegisterNode() {
  auto nodes = store_.FindResource("", "v1", "nodes");
  AD_CHECK(nodes != nullptr, kInternal, "node agent: the double serves no core/v1 nodes");
  store_.Mutate(*nodes, "", options_.node_name,
                [&](const ObjectPtr& current) -> std::optional<nlohmann::json> {
                  if (current != nullptr) return std::nullopt;  // another agent's, or ours
                  return NodeObject(options_.node_name, launch_.pod_ip);
                });
}

void NodeAgent::StopAll() {
  for (auto& [uid, run] : runs_) {
    if (run->process) run->process->Signal(SIGTERM);
  }
  // A second for containers to exit on SIGTERM; ChildProcess's destructor SIGKILLs the rest.
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < deadline) {
    bool any = false;
    for (auto& [uid, run] : runs_) {
      any = (run->process && !run->process->Poll().has_value()) || any;
    }
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  runs_.clear();
  std::lock_guard lock(mutex_);
  running_ = 0;
}

}  // namespace autodist::k8s
