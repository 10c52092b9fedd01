// The run policy end to end: a worker killed mid-training restarts the whole gang, which resumes
// from the checkpoint and succeeds; with backoffLimit 0 the same failure fails the job; a spec the
// CRD schema admits but the shared parser rejects fails as InvalidSpec before any pod exists.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "tests/operator_e2e/e2e_fixture.h"

namespace autodist::app::e2e {
namespace {

using std::chrono::seconds;

class RunPolicyEndToEnd : public OperatorEndToEnd {
 protected:
  // SIGKILLs worker-1's runtime (exit code 137: retried by OnFailure and ExitCode) once the pod
  // reports a running container; fails the test on a timeout.
  bool KillWorkerOne(const std::string& name) {
    return WaitFor(name, "a running worker-1 to kill", seconds(60),
                   [&] { return KillRuntime(name + "-worker-1"); });
  }
  // 200 steps under OnFailure with backoffLimit 2, a checkpoint every 10 steps in `checkpoints`.
  static JobManifest RestartableJob(const std::string& name, const std::string& checkpoints) {
    JobManifest manifest;
    manifest.name = name;
    manifest.steps = 200;
    manifest.log_interval_steps = 5;
    manifest.checkpoint_path = checkpoints;
    manifest.checkpoint_interval_steps = 10;
    manifest.restart_policy = "OnFailure";
    manifest.backoff_limit = 2;
    return manifest;
  }
  // Waits until the job runs and a checkpoint exists (the slowest worker is past step 10, where
  // the chief wrote one), so that an interruption has something to resume from.
  bool WaitPastTheFirstCheckpoint(const std::string& name) {
    return WaitForCondition(name, "Running") &&
           WaitFor(name, "training past the first checkpoint", seconds(60), [&] {
             const nlohmann::json job = Job(name);
             EXPECT_FALSE(ConditionTrue(job, "Succeeded"))
                 << "the job is too short to be interrupted";
             return StepOf(job) > 10 || ConditionTrue(job, "Succeeded");
           });
  }
};

TEST_F(RunPolicyEndToEnd, KilledWorkerRestartsTheGangWhichResumesFromTheCheckpoint) {
  const std::string name = "fmnist-restart";
  const std::shared_ptr<PodEvents> events = RecordPods(name);
  JobManifest manifest = RestartableJob(name, (root_ / "ckpt").string());
  // The status learns where the new gang resumed from a progress read (every 500 ms here) while
  // its chief runs: 200 steps in all let a fast machine finish the resumed part between two
  // reads, so the resumed gang gets many reads' worth of steps.
  manifest.steps = 2000;
  Apply(manifest.ToYaml());
  // Kill once a checkpoint exists.
  ASSERT_TRUE(WaitPastTheFirstCheckpoint(name));
  std::set<std::string> first_uids;
  for (const nlohmann::json& pod : Pods(name)) {
    EXPECT_EQ(Label(pod, "autodist.io/restart-generation"), "0");
    first_uids.insert(pod["metadata"].value("uid", ""));
  }
  ASSERT_EQ(first_uids.size(), 3u);
  ASSERT_TRUE(KillWorkerOne(name));

  ASSERT_TRUE(WaitForCondition(name, "Succeeded", seconds(180)));
  const nlohmann::json job = Job(name);
  const nlohmann::json& status = job.at("status");
  EXPECT_EQ(status.value("restartCount", -1), 1) << Dump(name);
  // One gang restart, announced with its cause (the Restarting condition has moved on since).
  std::vector<std::string> restarts;
  for (const nlohmann::json& event : Events(name)) {
    if (event.value("reason", "") == "GangRestart") restarts.push_back(event.value("message", ""));
  }
  ASSERT_EQ(restarts.size(), 1u) << Dump(name);
  EXPECT_TRUE(Contains(restarts[0], name + "-worker-1")) << restarts[0];
  EXPECT_TRUE(Contains(restarts[0], "exit code 137")) << restarts[0];
  EXPECT_TRUE(Contains(restarts[0], "restart 1 of at most 2")) << restarts[0];
  EXPECT_TRUE(Contains(restarts[0], "resuming from the latest checkpoint")) << restarts[0];
  EXPECT_FALSE(ConditionTrue(job, "Restarting")) << status.dump(2);
  // Every member of the new generation completed: the chief, worker 1 and the parameter server.
  ASSERT_TRUE(WaitForMembersSucceeded(name));
  EXPECT_EQ(Job(name)["status"]["progress"].value("step", 0), 2000) << Dump(name);

  // The whole gang was replaced: new pods of the next restart generation, under names of their
  // own (the old ones may still have been Terminating when they started).
  const std::vector<nlohmann::json> pods = Pods(name);
  ASSERT_EQ(pods.size(), 3u) << Dump(name);
  std::set<std::string> names;
  for (const nlohmann::json& pod : pods) {
    EXPECT_EQ(Label(pod, "autodist.io/restart-generation"), "1") << pod.dump(2);
    EXPECT_EQ(first_uids.count(pod["metadata"].value("uid", "")), 0u) << pod.dump(2);
    names.insert(pod["metadata"].value("name", ""));
  }
  EXPECT_EQ(names, (std::set<std::string>{name + "-worker-0-r1", name + "-worker-1-r1",
                                          name + "-ps-0-r1"}));
  const PodEvents::Summary summary = events->summary();
  EXPECT_EQ(summary.added.size(), 6u) << ::testing::PrintToString(summary.added);
  EXPECT_EQ(summary.deleted.size(), 3u) << ::testing::PrintToString(summary.deleted);
  EXPECT_LE(summary.max_alive, 6u);

  // The new chief continued from a checkpoint at step 10 or later, not from step 0.
  const CommandResult logs = Kubectl("logs " + name + "-worker-0-r1");
  ASSERT_EQ(logs.exit_code, 0) << logs.output;
  const size_t resumed = logs.output.find("resumed from ");
  ASSERT_NE(resumed, std::string::npos) << logs.output;
  const size_t at = logs.output.find(" at step ", resumed);
  ASSERT_NE(at, std::string::npos) << logs.output;
  const int resumed_step = std::stoi(logs.output.substr(at + 9));
  EXPECT_GE(resumed_step, 10) << logs.output;
  // The status says so too: the coordinator reports the chief's resume point.
  EXPECT_EQ(Job(name)["status"].value("resumedFromStep", -1), resumed_step) << Dump(name);
  // And kubectl shows it as Events: the member that failed first, then where the new gang
  // resumed.
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& [reason, message] : KubectlEvents(name)) by_reason[reason].push_back(message);
  ASSERT_EQ(by_reason["MemberFailed"].size(), 1u) << Dump(name);
  EXPECT_TRUE(Contains(by_reason["MemberFailed"][0],
                       "worker-1 (pod " + name + "-worker-1) failed first, with exit code 137"))
      << by_reason["MemberFailed"][0];
  EXPECT_EQ(by_reason["ResumedFromCheckpoint"],
            std::vector<std::string>{"the gang of restart 1 resumed from the checkpoint of step " +
                                     std::to_string(resumed_step)})
      << Dump(name);
  EXPECT_TRUE(WaitForCount(
      name, "jobs_restarted", [&] { return metrics_->jobs_restarted.With({"default"}).Value(); },
      1));
}

TEST_F(RunPolicyEndToEnd, ALostNodeStallsNoGangRestart) {
  const std::string name = "fmnist-lost-node";
  Apply(RestartableJob(name, (root_ / "ckpt-lost").string()).ToYaml());
  ASSERT_TRUE(WaitPastTheFirstCheckpoint(name));

  // The node goes away: its containers end and the API hears nothing more of it; the pods stay
  // Running as last reported. Another node takes whatever is created from now on.
  server_->LoseNode("node-2");
  // The eviction the node lifecycle controller makes of a node that stopped answering: a
  // deletion no kubelet will ever finish.
  const CommandResult evicted = Kubectl("delete pod " + name + "-worker-1 --wait=false");
  ASSERT_EQ(evicted.exit_code, 0) << evicted.output;

  // The old gang's pods are Terminating for good; the new gang, under names of its own, starts
  // on the other node at once and finishes the job from the checkpoint.
  ASSERT_TRUE(WaitForCondition(name, "Succeeded", seconds(180)));
  EXPECT_EQ(Job(name)["status"].value("restartCount", -1), 1) << Dump(name);
  std::set<std::string> terminating, finished;
  for (const nlohmann::json& pod : Pods(name)) {
    const std::string pod_name = pod["metadata"].value("name", "");
    if (Label(pod, "autodist.io/restart-generation") == "0") {
      EXPECT_TRUE(pod["metadata"].contains("deletionTimestamp")) << pod.dump(2);
      EXPECT_EQ(pod["spec"].value("nodeName", ""), "fake-node") << pod.dump(2);
      terminating.insert(pod_name);
    } else {
      EXPECT_EQ(pod["spec"].value("nodeName", ""), "node-2") << pod.dump(2);
      finished.insert(pod_name);
    }
  }
  EXPECT_EQ(terminating,
            (std::set<std::string>{name + "-worker-0", name + "-worker-1", name + "-ps-0"}))
      << Dump(name);
  EXPECT_EQ(finished, (std::set<std::string>{name + "-worker-0-r1", name + "-worker-1-r1",
                                             name + "-ps-0-r1"}))
      << Dump(name);
  std::vector<std::string> restarts;
  for (const nlohmann::json& event : Events(name)) {
    if (event.value("reason", "") == "GangRestart") restarts.push_back(event.value("message", ""));
  }
  ASSERT_EQ(restarts.size(), 1u) << Dump(name);
  EXPECT_TRUE(Contains(restarts[0], "pod " + name +
                                        "-worker-1 (worker-1) was deleted while the job was "
                                        "running (retryable under restartPolicy OnFailure)"))
      << restarts[0];
  EXPECT_EQ(Job(name)["status"]["progress"].value("step", 0), 200) << Dump(name);
}

TEST_F(RunPolicyEndToEnd, FailureBeyondBackoffLimitFailsTheJob) {
  const std::string name = "fmnist-backoff";
  JobManifest manifest;
  manifest.name = name;
  manifest.steps = 100000;  // never finishes by itself
  manifest.restart_policy = "OnFailure";
  manifest.backoff_limit = 0;
  manifest.clean_pod_policy = "Running";
  const std::shared_ptr<PodEvents> events = RecordPods(name);
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitForCondition(name, "Running"));
  ASSERT_TRUE(KillWorkerOne(name));

  const CommandResult waited =
      Kubectl("wait --for=condition=Failed adj/" + name + " --timeout=60s");
  ASSERT_EQ(waited.exit_code, 0) << waited.output << "\n" << Dump(name);
  const nlohmann::json job = Job(name);
  const nlohmann::json failed = ConditionOf(job, "Failed");
  EXPECT_EQ(failed.value("reason", ""), "BackoffLimitExceeded") << Dump(name);
  const std::string message = failed.value("message", "");
  EXPECT_TRUE(Contains(message, name + "-worker-1")) << message;
  EXPECT_TRUE(Contains(message, "exit code 137")) << message;
  EXPECT_TRUE(Contains(message, "backoffLimit (0)")) << message;
  EXPECT_EQ(job["status"].value("restartCount", -1), 0) << job.dump(2);
  EXPECT_EQ(job["status"].value("state", ""), "Failed") << job.dump(2);
  EXPECT_TRUE(job["status"].contains("completionTime")) << job.dump(2);
  EXPECT_FALSE(ConditionTrue(job, "Restarting")) << job.dump(2);

  // cleanPodPolicy Running: the chief and the parameter server, still running, are deleted;
  // the failed worker stays for its logs. No pod of a restart generation was ever created.
  ASSERT_TRUE(WaitFor(name, "the running pods to be cleaned up", seconds(30),
                      [&] { return Pods(name).size() == 1; }));
  EXPECT_EQ(Pods(name)[0]["metadata"].value("name", ""), name + "-worker-1");
  const PodEvents::Summary summary = events->summary();
  EXPECT_EQ(summary.added.size(), 3u) << ::testing::PrintToString(summary.added);
  for (const std::string& added : summary.added) {
    EXPECT_EQ(added.back(), '0') << added;  // generation 0
  }
  EXPECT_TRUE(WaitForCount(
      name, "jobs_failed", [&] { return metrics_->jobs_failed.With({"default"}).Value(); }, 1));
  EXPECT_EQ(metrics_->jobs_restarted.With({"default"}).Value(), 0);
}

TEST_F(RunPolicyEndToEnd, TheFirstFailingMemberIsAnEventWithItsErrorLine) {
  const std::string name = "fmnist-nodata";
  JobManifest manifest;
  manifest.name = name;
  manifest.data_dir = (root_ / "no-such-dataset").string();  // every worker fails to load it
  manifest.restart_policy = "ExitCode";                      // exit code 2: permanent
  Apply(manifest.ToYaml());
  const CommandResult waited =
      Kubectl("wait --for=condition=Failed adj/" + name + " --timeout=120s");
  ASSERT_EQ(waited.exit_code, 0) << waited.output << "\n" << Dump(name);
  std::vector<std::string> failed;
  for (const auto& [reason, message] : KubectlEvents(name)) {
    if (reason == "MemberFailed") failed.push_back(message);
  }
  ASSERT_EQ(failed.size(), 1u) << Dump(name);
  // A worker, with the runtime's last line: the tail of its log, which the pod's
  // terminationMessagePolicy FallbackToLogsOnError made its termination message. That is the
  // error itself ("autodist-runtime: error: ..."), or for the chief, which hears of its own
  // failure through the coordinator first, "autodist-runtime: worker-0: stopping: the job
  // failed: worker-0 ... failed: <the error>".
  EXPECT_TRUE(Contains(failed[0], "(pod " + name + "-worker-")) << failed[0];
  EXPECT_TRUE(Contains(failed[0], "failed first, with exit code 2 (Error): autodist-runtime: "))
      << failed[0];
  EXPECT_TRUE(Contains(failed[0], "Fashion-MNIST train image file")) << failed[0];
  EXPECT_TRUE(Contains(failed[0], "no-such-dataset")) << failed[0];
}

TEST_F(RunPolicyEndToEnd, InvalidSpecFailsNamingTheFieldAndCreatesNoPods) {
  const std::string name = "fmnist-invalid";
  JobManifest manifest;
  manifest.name = name;
  // The CRD types momentum (a number >= 0) for SGD and RMSprop, and cannot say which optimizer
  // takes it: the schema admits it under Adam, the shared parser (job::ParseJob) does not.
  manifest.optimizer_options = {"momentum: 0.9"};
  const std::shared_ptr<PodEvents> events = RecordPods(name);
  Apply(manifest.ToYaml());

  const CommandResult waited =
      Kubectl("wait --for=condition=Failed adj/" + name + " --timeout=60s");
  ASSERT_EQ(waited.exit_code, 0) << waited.output << "\n" << Dump(name);
  const nlohmann::json job = Job(name);
  const nlohmann::json failed = ConditionOf(job, "Failed");
  EXPECT_EQ(failed.value("reason", ""), "InvalidSpec") << job.dump(2);
  const std::string message = failed.value("message", "");
  EXPECT_EQ(message.rfind("spec.training.optimizer", 0), 0u) << message;
  EXPECT_TRUE(Contains(message, "momentum")) << message;
  EXPECT_EQ(job["status"].value("state", ""), "Failed") << job.dump(2);

  const CommandResult described = Kubectl("get adj " + name + " --no-headers");
  EXPECT_TRUE(Contains(described.output, "Failed")) << described.output;
  // Give a wrong operator time to act on it, then check nothing was ever made.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(events->summary().added.empty()) << ::testing::PrintToString(events->summary().added);
  EXPECT_EQ(CountObjects("pods", name), 0u);
  EXPECT_EQ(CountObjects("configmaps", name), 0u);
  EXPECT_EQ(CountObjects("services", name), 0u);
  EXPECT_TRUE(WaitForCount(
      name, "jobs_failed", [&] { return metrics_->jobs_failed.With({"default"}).Value(); }, 1));
}

}  // namespace
}  // namespace autodist::app::e2e
