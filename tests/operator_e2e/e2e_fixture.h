// The end-to-end tests' common ground: an API-server test double with its node agent (pods run
// autodist-runtime as local processes), the AutoDistJob controller in-process against it (so a
// test can stop and start the operator), the real kubectl, a builder of Fashion-MNIST job
// manifests, reads of the double's store that injected faults never touch, a recorder of every
// pod event, and waits that dump the job, its pods, events and pod logs when they time out.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "operator/app/job_controller.h"
#include "operator/app/operator_options.h"
#include "operator/controller/operator_metrics.h"
#include "operator/kube/client.h"
#include "runtime/observe/metrics.h"
#include "tests/k8s/test_api_server.h"
#include "tests/k8s/watch.h"

namespace autodist::app::e2e {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `command` through the shell, capturing stdout and stderr together.
CommandResult RunCommand(const std::string& command);

// A Fashion-MNIST MLP job (examples/fashion-mnist/fmnist_mlp.onnx): by default 2 workers and 1
// parameter server under the PS builder, Adam, checkpoints every 10 steps.
struct JobManifest {
  // Every pod is a process on 127.0.0.1, on ports of a slot the job's namespace/name hashes to
  // (reconcile::ListMembers): two tests that ctest runs side by side must not name jobs whose
  // slots meet while both run pods ("fmnist-no-volcano" met "fmnist-backoff").
  std::string name;
  int steps = 30;
  int workers = 2;
  int parameter_servers = 1;
  int log_interval_steps = 10;
  std::string checkpoint_path;  // "" = no spec.training.checkpoint
  int checkpoint_interval_steps = 10;
  // More lines under spec.training.optimizer, each "key: value" (indented by the builder).
  std::vector<std::string> optimizer_options;
  std::string restart_policy;  // "" = the default (OnFailure)
  std::optional<int> backoff_limit = 1;
  std::string clean_pod_policy = "None";
  std::optional<int> ttl_seconds_after_finished;
  std::string scheduler_name;  // "" = none: spec.template.spec.schedulerName
  // "key: value" lines under spec.runPolicy.schedulingPolicy (none: no such block).
  std::vector<std::string> scheduling_policy;
  std::vector<std::string> resources;      // more "key: value" lines under spec.resources
  std::vector<std::string> template_spec;  // more "key: value" lines under spec.template.spec
  std::string data_dir;                    // "" = the dataset's default directory

  std::string ToYaml() const;
};

// Every event of one job's pods, straight from the double's store (not through the API, so
// injected faults never hide one): pods ever created, deleted, and the most alive at once.
class PodEvents : public k8s::WatchSink {
 public:
  void Write(const std::string& data) override;
  void Close() override;
  size_t Backlog() const override { return 0; }

  struct Summary {
    std::vector<std::string> added;    // "name uid generation", in order
    std::vector<std::string> deleted;  // "name uid", in order
    size_t max_alive = 0;
    std::map<std::string, std::string> alive;  // name -> uid
    bool closed = false;
  };
  Summary summary() const;

 private:
  void Record(const nlohmann::json& event);

  mutable std::mutex mutex_;
  std::string buffer_;
  Summary summary_;
};

class OperatorEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // A new JobController (with a new client and metrics), started and synced.
  void StartOperator();
  // Destroys the controller: its workers and informers stop, the pods run on.
  void StopOperator();
  // Stops the operator, applies `change` to its options, and starts it again.
  void RestartOperatorWith(const std::function<void(OperatorOptions&)>& change);

  // `kubectl <args>` against the double, with its own cache directory.
  CommandResult Kubectl(const std::string& args);
  // The job's Events as `kubectl get events --field-selector involvedObject.name=JOB` lists
  // them: (reason, message) in the order the server returns them.
  std::vector<std::pair<std::string, std::string>> KubectlEvents(const std::string& job);
  // kubectl apply -f of `manifest`; a failed apply fails the test.
  void Apply(const std::string& manifest);

  // Reads from the double's store: never subject to injected faults.
  nlohmann::json Job(const std::string& name);  // null when absent
  std::vector<nlohmann::json> Pods(const std::string& job);
  nlohmann::json Pod(const std::string& name);                             // null when absent
  size_t CountObjects(const std::string& plural, const std::string& job);  // by job label
  std::vector<nlohmann::json> Objects(const std::string& plural, const std::string& job);
  std::vector<nlohmann::json> Events(const std::string& job);  // Events on the job
  // Records the events of `job`'s pods from now on (until the test ends).
  std::shared_ptr<PodEvents> RecordPods(const std::string& job);

  // Waits up to `timeout` until `done`; on a timeout, fails the test with `what` and Dump(job).
  bool WaitFor(const std::string& job, const std::string& what, std::chrono::seconds timeout,
               const std::function<bool()>& done);
  // Waits until the job's condition `type` is True (fails the test on a timeout, or when the
  // job ends in another terminal condition first).
  bool WaitForCondition(const std::string& job, const std::string& type,
                        std::chrono::seconds timeout = std::chrono::seconds(120));

  // Waits until status.replicaStatuses count every member succeeded (a finished job's counts
  // follow the members that complete after the chief).
  bool WaitForMembersSucceeded(const std::string& job, int workers = 2, int parameter_servers = 1);

  // The operator counts a transition in its metrics just after the status write the test sees:
  // waits until `counter()` reads `value`.
  bool WaitForCount(const std::string& job, const std::string& what,
                    const std::function<double()>& counter, double value);

  // `signal` to the runtime process of `pod` (found through its container's containerID,
  // fake-kubelet://<pid>); false when the pod has no running runtime container.
  bool SignalRuntime(const std::string& pod, int signal);
  bool KillRuntime(const std::string& pod) { return SignalRuntime(pod, SIGKILL); }

  // The job as stored, its pods with phases, uids and exit codes, its Events, and the tail of
  // every pod log: what a failed assertion needs to be understood.
  std::string Dump(const std::string& job);
  std::string PodLogs();
  // Writes the requests the operator made (the double's count for its User-Agent) to
  // AUTODIST_OPERATOR_CALLS_DIR/<suite>.<test>.json, where tests/deploy/check_operator_rbac.py
  // compares the whole suite's with the chart's RBAC rules.
  void RecordOperatorCalls();

  std::filesystem::path root_;
  std::unique_ptr<k8s::TestApiServer> server_;
  OperatorOptions options_;
  std::unique_ptr<observe::Registry> registry_;
  std::unique_ptr<controller::OperatorMetrics> metrics_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<JobController> jobs_;

 private:
  std::string kubectl_;
  std::vector<std::shared_ptr<k8s::Watcher>> recorders_;
};

// status.conditions[type] of a job object, or null.
nlohmann::json ConditionOf(const nlohmann::json& job, const std::string& type);
bool ConditionTrue(const nlohmann::json& job, const std::string& type);
// status.progress.step of a job object (0 before any progress).
int StepOf(const nlohmann::json& job);
// The pod's autodist-runtime container status, or null.
nlohmann::json RuntimeContainer(const nlohmann::json& pod);
std::string Label(const nlohmann::json& object, const std::string& key);
bool Contains(const std::string& text, const std::string& part);

}  // namespace autodist::app::e2e
