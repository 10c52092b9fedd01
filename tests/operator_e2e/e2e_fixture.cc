#include "tests/operator_e2e/e2e_fixture.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "operator/app/log.h"
#include "operator/kube/config.h"
#include "operator/reconcile/options.h"
#include "tests/k8s/selectors.h"
#include "tests/k8s/store.h"

namespace autodist::app::e2e {
namespace fs = std::filesystem;

namespace {

// A rare SIGSEGV of this suite under load leaves no output after "[ RUN ]" (issue 17's notes):
// the stack of the crashing thread, written with async-signal-safe calls, says where it was.
void PrintStackAndDie(int signal_number) {
  static constexpr char kHead[] = "\n*** operator_e2e_test: fatal signal; the crashing thread:\n";
  (void)!::write(STDERR_FILENO, kHead, sizeof(kHead) - 1);
  std::array<void*, 64> frames{};
  const int depth = ::backtrace(frames.data(), static_cast<int>(frames.size()));
  ::backtrace_symbols_fd(frames.data(), depth, STDERR_FILENO);
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

[[maybe_unused]] const bool kCrashHandlersInstalled = [] {
  for (const int signal_number : {SIGSEGV, SIGBUS, SIGABRT}) {
    ::signal(signal_number, PrintStackAndDie);
  }
  return true;
}();

}  // namespace

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), read);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string JobManifest::ToYaml() const {
  std::ostringstream yaml;
  yaml << "apiVersion: autodist.io/v1alpha1\n"
       << "kind: AutoDistJob\n"
       << "metadata:\n"
       << "  name: " << name << "\n"
       << "spec:\n"
       << "  model:\n"
       << "    path: " AUTODIST_SOURCE_DIR "/examples/fashion-mnist/fmnist_mlp.onnx\n"
       << "    loss: loss\n"
       << "    logits: logits\n"
       << "    labels: label\n"
       << "  data:\n"
       << "    format: fashion-mnist\n";
  if (!data_dir.empty()) yaml << "    dir: " << data_dir << "\n";
  yaml << "    batchSizePerReplica: 32\n"
       << "  training:\n"
       << "    steps: " << steps << "\n"
       << "    optimizer:\n"
       << "      name: adam\n"
       << "      lr: 0.001\n";
  for (const std::string& option : optimizer_options) yaml << "      " << option << "\n";
  yaml << "    logIntervalSteps: " << log_interval_steps << "\n";
  if (!checkpoint_path.empty()) {
    yaml << "    checkpoint:\n"
         << "      path: " << checkpoint_path << "\n"
         << "      intervalSteps: " << checkpoint_interval_steps << "\n";
  }
  yaml << "  strategy:\n"
       << "    builder: PS\n"
       << "  resources:\n"
       << "    workers: " << workers << "\n"
       << "    parameterServers: " << parameter_servers << "\n";
  for (const std::string& line : resources) yaml << "    " << line << "\n";
  yaml << "  runPolicy:\n";
  if (!restart_policy.empty()) yaml << "    restartPolicy: " << restart_policy << "\n";
  if (backoff_limit.has_value()) yaml << "    backoffLimit: " << *backoff_limit << "\n";
  yaml << "    cleanPodPolicy: " << clean_pod_policy << "\n";
  if (ttl_seconds_after_finished.has_value()) {
    yaml << "    ttlSecondsAfterFinished: " << *ttl_seconds_after_finished << "\n";
  }
  if (!scheduling_policy.empty()) {
    yaml << "    schedulingPolicy:\n";
    for (const std::string& line : scheduling_policy) yaml << "      " << line << "\n";
  }
  if (!scheduler_name.empty() || !template_spec.empty()) {
    yaml << "  template:\n    spec:\n";
    if (!scheduler_name.empty()) yaml << "      schedulerName: " << scheduler_name << "\n";
    for (const std::string& line : template_spec) yaml << "      " << line << "\n";
  }
  return yaml.str();
}

// --- PodEvents ---

void PodEvents::Write(const std::string& data) {
  std::lock_guard lock(mutex_);
  buffer_ += data;
  size_t newline = 0;
  while ((newline = buffer_.find('\n')) != std::string::npos) {
    const std::string line = buffer_.substr(0, newline);
    buffer_.erase(0, newline + 1);
    if (line.empty()) continue;
    Record(nlohmann::json::parse(line, nullptr, false));
  }
}

void PodEvents::Close() {
  std::lock_guard lock(mutex_);
  summary_.closed = true;
}

void PodEvents::Record(const nlohmann::json& event) {
  if (!event.is_object() || !event.contains("object")) return;
  const std::string type = event.value("type", "");
  const nlohmann::json& metadata = event.at("object").value("metadata", nlohmann::json::object());
  const std::string name = metadata.value("name", "");
  const std::string uid = metadata.value("uid", "");
  if (type == "ADDED") {
    const std::string generation = Label(event.at("object"), "autodist.io/restart-generation");
    summary_.added.push_back(name + " " + uid + " " + generation);
    summary_.alive[name] = uid;
  } else if (type == "DELETED") {
    summary_.deleted.push_back(name + " " + uid);
    summary_.alive.erase(name);
  }
  summary_.max_alive = std::max(summary_.max_alive, summary_.alive.size());
}

PodEvents::Summary PodEvents::summary() const {
  std::lock_guard lock(mutex_);
  return summary_;
}

// --- helpers ---

nlohmann::json ConditionOf(const nlohmann::json& job, const std::string& type) {
  if (!job.is_object()) return nullptr;
  const nlohmann::json conditions =
      job.value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array());
  for (const nlohmann::json& condition : conditions) {
    if (condition.value("type", "") == type) return condition;
  }
  return nullptr;
}

bool ConditionTrue(const nlohmann::json& job, const std::string& type) {
  const nlohmann::json condition = ConditionOf(job, type);
  return condition.is_object() && condition.value("status", "") == "True";
}

int StepOf(const nlohmann::json& job) {
  return job.value("status", nlohmann::json::object())
      .value("progress", nlohmann::json::object())
      .value("step", 0);
}

nlohmann::json RuntimeContainer(const nlohmann::json& pod) {
  if (!pod.is_object()) return nullptr;
  const nlohmann::json statuses = pod.value("status", nlohmann::json::object())
                                      .value("containerStatuses", nlohmann::json::array());
  for (const nlohmann::json& container : statuses) {
    if (container.value("name", "") == "autodist-runtime") return container;
  }
  return nullptr;
}

std::string Label(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return "";
  const nlohmann::json labels =
      object.value("metadata", nlohmann::json::object()).value("labels", nlohmann::json::object());
  const auto found = labels.find(key);
  return found != labels.end() && found->is_string() ? found->get<std::string>() : "";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

namespace {

k8s::ResourceInfo ResourceOf(k8s::Store& store, const std::string& plural) {
  const bool job = plural == "autodistjobs";
  const bool policy = plural == "networkpolicies";
  const auto info = store.FindResource(job      ? "autodist.io"
                                       : policy ? "networking.k8s.io"
                                                : "",
                                       job ? "v1alpha1" : "v1", plural);
  if (info == nullptr) throw std::runtime_error("the double serves no " + plural);
  return *info;
}

std::vector<nlohmann::json> ListByJob(k8s::Store& store, const std::string& plural,
                                      const std::string& job) {
  const k8s::ResourceInfo info = ResourceOf(store, plural);
  const k8s::ListResult listed =
      store.List(info, "default", k8s::LabelSelector::Parse("autodist.io/job-name=" + job),
                 k8s::FieldSelector::Parse("", info), 0, "");
  std::vector<nlohmann::json> out;
  for (const k8s::ObjectPtr& object : listed.items) out.push_back(object->object);
  return out;
}

std::string Tail(const std::string& text, size_t size) {
  return text.size() > size ? "..." + text.substr(text.size() - size) : text;
}

}  // namespace

// --- OperatorEndToEnd ---

void OperatorEndToEnd::SetUp() {
  // kubectl is the machine's (BRIEF: the tools tests use); without it there is no end to end.
  if (!fs::exists("/usr/bin/kubectl")) GTEST_SKIP() << "no /usr/bin/kubectl";
  root_ = fs::path(::testing::TempDir()) /
          ("operator-e2e-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(root_);
  fs::create_directories(root_);
  // The pods run `autodist-runtime` from PATH, as in the runtime image.
  const char* path = std::getenv("PATH");
  const std::string bin_dir = AUTODIST_BIN_DIR;
  if (path == nullptr || !Contains(path, bin_dir)) {
    setenv("PATH", (bin_dir + ":" + (path ? path : "")).c_str(), 1);
  }

  k8s::TestApiServerOptions server_options;
  server_options.node_agent = true;
  server_options.agent.host_volume_root = root_.string();
  server_options.agent.log_dir = (root_ / "pod-logs").string();
  server_options.agent.max_grace = std::chrono::milliseconds(2000);
  // The cluster runs Volcano beside the default scheduler (its CRD is installed by the tests that
  // use it): its pods are bound as gangs.
  server_options.agent.gang_schedulers["volcano"] = k8s::GangScheduler::Volcano();
  server_ = std::make_unique<k8s::TestApiServer>(server_options);
  server_->CreateFromFile(k8s::AutoDistJobCrdPath());
  kubectl_ = "HOME=" + root_.string() + " /usr/bin/kubectl --kubeconfig " +
             server_->kubeconfig_path() + " --cache-dir " + (root_ / "kube-cache").string() +
             " --request-timeout=30s ";

  ConfigureLogging("text", "warn");
  options_.workers = 2;
  options_.address_mode = "local-processes";
  options_.progress_interval = std::chrono::milliseconds(500);
  options_.reconciler.runtime_image = "autodist/autodist-runtime:e2e";
  options_.reconciler.config_mount_path = (root_ / "autodist-config").string();
  options_.reconciler.model_mount_path = (root_ / "autodist-model").string();
  options_.reconciler.working_dir = root_.string();
  // Every pod is a local process here: its scratch volumes go under the agent's root, where the
  // double materializes volumes.
  options_.reconciler.tmp_mount_path = (root_ / "tmp").string();
  options_.reconciler.shm_mount_path = (root_ / "shm").string();
  options_.reconciler.tls.mount_path = (root_ / "autodist-tls").string();
  FinishOperatorOptions(options_);
  reconcile::ValidateOptions(options_.reconciler);
  StartOperator();
}

void OperatorEndToEnd::TearDown() {
  if (root_.empty()) return;  // skipped
  for (const auto& recorder : recorders_) recorder->Stop();
  recorders_.clear();
  StopOperator();
  RecordOperatorCalls();
  server_.reset();
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

void OperatorEndToEnd::RecordOperatorCalls() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = AUTODIST_OPERATOR_CALLS_DIR;
  std::error_code error;
  fs::create_directories(dir, error);
  ASSERT_FALSE(error) << dir << ": " << error.message();
  const nlohmann::json by_client =
      server_->faults().Stats().value("requestsByClient", nlohmann::json::object());
  const fs::path file = dir / (std::string(test->test_suite_name()) + "." + test->name() + ".json");
  std::ofstream(file) << by_client.value("autodist-operator", nlohmann::json::object()).dump(2);
}

void OperatorEndToEnd::StartOperator() {
  registry_ = std::make_unique<observe::Registry>();
  metrics_ = std::make_unique<controller::OperatorMetrics>(*registry_);
  client_ = std::make_unique<kube::Client>(kube::LoadKubeconfig(server_->kubeconfig_path()));
  jobs_ = std::make_unique<JobController>(*client_, options_, *metrics_);
  jobs_->Start();
}

void OperatorEndToEnd::StopOperator() {
  jobs_.reset();
  client_.reset();
  metrics_.reset();
  registry_.reset();
}

void OperatorEndToEnd::RestartOperatorWith(const std::function<void(OperatorOptions&)>& change) {
  StopOperator();
  change(options_);
  StartOperator();
}

CommandResult OperatorEndToEnd::Kubectl(const std::string& args) {
  return RunCommand(kubectl_ + args);
}

void OperatorEndToEnd::Apply(const std::string& manifest) {
  const fs::path file = root_ / "job.yaml";
  std::ofstream(file) << manifest;
  const CommandResult applied = Kubectl("apply -f " + file.string());
  ASSERT_EQ(applied.exit_code, 0) << applied.output << "\n" << manifest;
}

nlohmann::json OperatorEndToEnd::Job(const std::string& name) {
  k8s::Store& store = server_->store();
  const k8s::ObjectPtr job = store.Get(ResourceOf(store, "autodistjobs"), "default", name);
  return job ? job->object : nlohmann::json();
}

std::vector<nlohmann::json> OperatorEndToEnd::Pods(const std::string& job) {
  return ListByJob(server_->store(), "pods", job);
}

nlohmann::json OperatorEndToEnd::Pod(const std::string& name) {
  k8s::Store& store = server_->store();
  const k8s::ObjectPtr pod = store.Get(ResourceOf(store, "pods"), "default", name);
  return pod ? pod->object : nlohmann::json();
}

size_t OperatorEndToEnd::CountObjects(const std::string& plural, const std::string& job) {
  return ListByJob(server_->store(), plural, job).size();
}

std::vector<nlohmann::json> OperatorEndToEnd::Objects(const std::string& plural,
                                                      const std::string& job) {
  return ListByJob(server_->store(), plural, job);
}

std::vector<std::pair<std::string, std::string>> OperatorEndToEnd::KubectlEvents(
    const std::string& job) {
  const CommandResult listed =
      Kubectl("get events --field-selector involvedObject.name=" + job + " -o json");
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  std::vector<std::pair<std::string, std::string>> events;
  const size_t json_start = listed.output.find('{');  // after any warning kubectl printed
  if (listed.exit_code != 0 || json_start == std::string::npos) return events;
  const nlohmann::json list = nlohmann::json::parse(listed.output.substr(json_start));
  for (const nlohmann::json& event : list.value("items", nlohmann::json::array())) {
    events.emplace_back(event.value("reason", ""), event.value("message", ""));
  }
  return events;
}

std::vector<nlohmann::json> OperatorEndToEnd::Events(const std::string& job) {
  k8s::Store& store = server_->store();
  const k8s::ResourceInfo events = ResourceOf(store, "events");
  std::vector<nlohmann::json> out;
  for (const k8s::ObjectPtr& event : store.ListAll(events, "default")) {
    const nlohmann::json& object = event->object;
    if (object.value("involvedObject", nlohmann::json::object()).value("name", "") == job) {
      out.push_back(object);
    }
  }
  return out;
}

std::shared_ptr<PodEvents> OperatorEndToEnd::RecordPods(const std::string& job) {
  k8s::Store& store = server_->store();
  auto events = std::make_shared<PodEvents>();
  k8s::WatchOptions options;
  options.ns = "default";
  options.labels = k8s::LabelSelector::Parse("autodist.io/job-name=" + job);
  recorders_.push_back(store.Watch(ResourceOf(store, "pods"), k8s::WatchStart{}, options, events));
  return events;
}

bool OperatorEndToEnd::WaitFor(const std::string& job, const std::string& what,
                               std::chrono::seconds timeout, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ADD_FAILURE() << "timed out after " << timeout.count() << " s waiting for " << what << "\n"
                    << Dump(job);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

bool OperatorEndToEnd::WaitForCondition(const std::string& job, const std::string& type,
                                        std::chrono::seconds timeout) {
  std::string other;
  const bool reached = WaitFor(job, "condition " + type + " of " + job, timeout, [&] {
    const nlohmann::json object = Job(job);
    if (ConditionTrue(object, type)) return true;
    for (const char* terminal : {"Succeeded", "Failed"}) {
      if (terminal != type && ConditionTrue(object, terminal)) {
        other = terminal;
        return true;
      }
    }
    return false;
  });
  if (!reached) return false;
  if (!other.empty()) {
    ADD_FAILURE() << "job " << job << " ended " << other << " while waiting for " << type << "\n"
                  << Dump(job);
    return false;
  }
  return true;
}

bool OperatorEndToEnd::WaitForMembersSucceeded(const std::string& job, int workers,
                                               int parameter_servers) {
  return WaitFor(job, "every member to succeed", std::chrono::seconds(30), [&] {
    const nlohmann::json counts = Job(job)["status"]["replicaStatuses"];
    return counts["Worker"].value("succeeded", 0) == workers &&
           (parameter_servers == 0 || counts["PS"].value("succeeded", 0) == parameter_servers);
  });
}

bool OperatorEndToEnd::WaitForCount(const std::string& job, const std::string& what,
                                    const std::function<double()>& counter, double value) {
  return WaitFor(job, what + " to reach " + std::to_string(value), std::chrono::seconds(10),
                 [&] { return counter() == value; });
}

bool OperatorEndToEnd::SignalRuntime(const std::string& pod, int signal) {
  const nlohmann::json container = RuntimeContainer(Pod(pod));
  if (!container.is_object() || !container.contains("state") ||
      !container.at("state").contains("running")) {
    return false;
  }
  const std::string id = container.value("containerID", "");
  const std::string prefix = "fake-kubelet://";
  if (id.rfind(prefix, 0) != 0) return false;
  const pid_t pid = static_cast<pid_t>(std::stol(id.substr(prefix.size())));
  return pid > 1 && ::kill(pid, signal) == 0;
}

std::string OperatorEndToEnd::Dump(const std::string& job) {
  std::ostringstream out;
  out << "== job " << job << "\n" << Job(job).dump(2) << "\n== pods\n";
  for (const nlohmann::json& pod : Pods(job)) {
    const nlohmann::json& metadata = pod.at("metadata");
    out << metadata.value("name", "") << " uid " << metadata.value("uid", "") << " generation "
        << Label(pod, "autodist.io/restart-generation") << " phase "
        << pod.value("status", nlohmann::json::object()).value("phase", "") << " runtime "
        << RuntimeContainer(pod).dump() << "\n";
  }
  out << "== events\n";
  for (const nlohmann::json& event : Events(job)) {
    out << event.value("type", "") << " " << event.value("reason", "") << ": "
        << event.value("message", "") << "\n";
  }
  out << "== faults " << server_->faults().State().dump() << "\n";
  out << PodLogs();
  return out.str();
}

std::string OperatorEndToEnd::PodLogs() {
  std::string logs;
  const fs::path dir = root_ / "pod-logs";
  if (!fs::exists(dir)) return logs;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    logs += "== " + entry.path().string() + "\n" + Tail(text, 3000) + "\n";
  }
  return logs;
}

}  // namespace autodist::app::e2e
