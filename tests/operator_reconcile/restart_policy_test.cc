// restartPolicy: which failures restart the whole gang and which fail the job, including
// ExitCode's boundary (127 permanent, 128 retryable) and how gang restarts proceed.
#include "operator/reconcile/restart_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/conditions.h"
#include "operator/reconcile/verdict.h"
#include "reconcile_test_support.h"

namespace autodist::reconcile {
namespace {

using job::RestartPolicy;
using testing::At;
using testing::Cluster;
using testing::Created;
using testing::Deleted;
using ::testing::ElementsAre;
using testing::EventReasons;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::JobObject;
using ::testing::UnorderedElementsAre;

TEST(RestartPolicyTest, ClassifiesExitCodesAsKubeflowDoes) {
  for (const int code : {1, 2, 3, 127, 128, 137, 143, 255}) {
    EXPECT_EQ(ClassifyFailure(RestartPolicy::kNever, code), FailureClass::kPermanent) << code;
    EXPECT_EQ(ClassifyFailure(RestartPolicy::kOnFailure, code), FailureClass::kRetryable) << code;
  }
  EXPECT_EQ(ClassifyFailure(RestartPolicy::kExitCode, 1), FailureClass::kPermanent);
  EXPECT_EQ(ClassifyFailure(RestartPolicy::kExitCode, 127), FailureClass::kPermanent);
  EXPECT_EQ(ClassifyFailure(RestartPolicy::kExitCode, 128), FailureClass::kRetryable);
  EXPECT_EQ(ClassifyFailure(RestartPolicy::kExitCode, 255), FailureClass::kRetryable);
  // No exit code (evicted, deleted): retried like a signal.
  EXPECT_EQ(ClassifyFailure(RestartPolicy::kExitCode, std::nullopt), FailureClass::kRetryable);
  EXPECT_EQ(ClassifyFailure(RestartPolicy::kNever, std::nullopt), FailureClass::kPermanent);
  EXPECT_FALSE(IsRetryableExitCode(127));
  EXPECT_TRUE(IsRetryableExitCode(128));
}

// A job of 2 workers and 1 PS with `policy`, all pods running.
Cluster RunningJob(const std::string& policy, const nlohmann::json& extra = nullptr) {
  nlohmann::json run_policy = {{"restartPolicy", policy}};
  if (!extra.is_null()) run_policy.merge_patch(extra);
  Cluster cluster(JobObject({{"runPolicy", run_policy}}));
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(1));
  EXPECT_EQ(cluster.status()["state"], "Running");
  return cluster;
}

void ExpectGangRestart(Cluster& cluster, const Plan& plan, int restart) {
  EXPECT_EQ(cluster.status()["state"], "Restarting");
  EXPECT_EQ(cluster.status()["restartCount"], restart);
  EXPECT_EQ(cluster.ConditionStatus(kRestarting), "True");
  EXPECT_EQ(cluster.ConditionReason(kRestarting), kReasonGangRestart);
  EXPECT_EQ(cluster.ConditionStatus(kRunning), "False");
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonGangRestart);
  EXPECT_THAT(Deleted(plan),
              UnorderedElementsAre("fmnist-worker-0", "fmnist-worker-1", "fmnist-ps-0"));
  EXPECT_THAT(plan.creates, IsEmpty());
  // The first failing member, then the restart.
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonMemberFailed, kReasonGangRestart));
  EXPECT_EQ(plan.events[0].type, kEventWarning);
  EXPECT_EQ(plan.events[1].type, kEventWarning);
}

TEST(RestartPolicyTest, OnFailureRestartsTheWholeGang) {
  Cluster cluster = RunningJob("OnFailure");
  cluster.set_graceful_deletion(true);
  cluster.Exit("fmnist-worker-1", 1);
  Plan plan = cluster.Reconcile(At(2));
  ExpectGangRestart(cluster, plan, 1);
  EXPECT_EQ(cluster.ConditionOf(kRestarting)["message"],
            "pod fmnist-worker-1 (worker-1) failed with exit code 1 (retryable under "
            "restartPolicy OnFailure); restarting all 3 pods (restart 1), starting over: the job "
            "has no spec.training.checkpoint");
  EXPECT_EQ(cluster.status()["replicaStatuses"]["Worker"]["failed"], 1);

  // The old pods are Terminating, for as long as their grace period (or for good, on a node that
  // is gone): the new gang starts at once under names of its own, and nothing is deleted twice.
  plan = cluster.Reconcile(At(3));
  EXPECT_THAT(Created(plan, "Pod"),
              ElementsAre("fmnist-worker-0-r1", "fmnist-worker-1-r1", "fmnist-ps-0-r1"));
  for (const nlohmann::json& pod : plan.creates) {
    EXPECT_EQ(pod["metadata"]["labels"]["autodist.io/restart-generation"], "1");
    EXPECT_EQ(pod["spec"]["hostname"], pod["metadata"]["name"]);
  }
  // The new gang meets at its own chief.
  EXPECT_THAT(cluster.pod("fmnist-ps-0-r1")["spec"]["containers"].dump(),
              HasSubstr("\"--coordinator\",\"fmnist-worker-0-r1.fmnist.ml.svc:29500\""));
  EXPECT_THAT(plan.deletes, IsEmpty());
  EXPECT_EQ(cluster.status()["state"], "Restarting");
  // The old gang's pods, Terminating, count in no column (nor do the new ones, not seen yet).
  EXPECT_EQ(cluster.status()["replicaStatuses"]["Worker"],
            nlohmann::json::parse(R"({"active": 0, "succeeded": 0, "failed": 0})"));

  for (const char* pod : {"fmnist-worker-0-r1", "fmnist-worker-1-r1", "fmnist-ps-0-r1"}) {
    cluster.SetPhase(pod, "Running");
  }
  plan = cluster.Reconcile(At(5));
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_EQ(cluster.ConditionStatus(kRestarting), "False");
  EXPECT_EQ(cluster.ConditionReason(kRestarting), kReasonAllPodsRunning);
  EXPECT_EQ(cluster.ConditionOf(kRunning)["message"], "all 3 pods are running (after restart 1)");
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonAllPodsRunning));

  EXPECT_EQ(plan.coordinator, "fmnist-worker-0-r1.fmnist.ml.svc:29500");

  cluster.Exit("fmnist-worker-0-r1", 0);
  cluster.Reconcile(At(6));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.status()["restartCount"], 1);
}

TEST(RestartPolicyTest, AFailedParameterServerIsNeverHiddenBehindRunning) {
  Cluster cluster = RunningJob("OnFailure");
  cluster.Exit("fmnist-ps-0", 137, "OOMKilled");
  const Plan plan = cluster.Reconcile(At(2));
  ExpectGangRestart(cluster, plan, 1);
  EXPECT_THAT(cluster.ConditionOf(kRestarting)["message"].get<std::string>(),
              HasSubstr("pod fmnist-ps-0 (ps-0) failed with exit code 137 (OOMKilled)"));
  EXPECT_EQ(cluster.status()["replicaStatuses"]["PS"]["failed"], 1);
}

TEST(RestartPolicyTest, NeverFailsTheJob) {
  Cluster cluster = RunningJob("Never");
  cluster.Exit("fmnist-worker-1", 137);
  const Plan plan = cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonPodFailed);
  EXPECT_EQ(cluster.ConditionOf(kFailed)["message"],
            "pod fmnist-worker-1 (worker-1) failed with exit code 137 (permanent under "
            "restartPolicy Never)");
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonPodFailed);
  EXPECT_EQ(cluster.status()["restartCount"], 0);
  EXPECT_EQ(cluster.status()["completionTime"], "2025-01-01T10:00:02Z");
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonMemberFailed, kReasonPodFailed));
  EXPECT_EQ(plan.events[0].message,
            "worker-1 (pod fmnist-worker-1) failed first, with exit code 137 and no message");
  EXPECT_THAT(plan.deletes, IsEmpty());  // cleanPodPolicy None
}

TEST(RestartPolicyTest, TheFirstFailingMemberIsNamedWithItsLastErrorLine) {
  Cluster cluster = RunningJob("OnFailure");
  // worker-1 failed first with an error; the chief and the server were stopped because of it
  // (exit code 3), the chief before worker-1 was even seen ending.
  cluster.Exit("fmnist-worker-0", 3, "Error", "autodist-runtime: worker-0: the job failed\n",
               "2025-01-01T10:00:01Z");
  cluster.Exit("fmnist-worker-1", 1, "Error",
               "step 7/100  loss 0.51\nautodist-runtime: error: step 8: the loss is NaN\n\n",
               "2025-01-01T10:00:02Z");
  cluster.Exit("fmnist-ps-0", 1, "Error", "connection reset", "2025-01-01T10:00:03Z");
  const Plan plan = cluster.Reconcile(At(4));
  ASSERT_THAT(EventReasons(plan), ElementsAre(kReasonMemberFailed, kReasonGangRestart));
  EXPECT_EQ(plan.events[0].message,
            "worker-1 (pod fmnist-worker-1) failed first, with exit code 1 (Error): "
            "autodist-runtime: error: step 8: the loss is NaN");
}

TEST(RestartPolicyTest, ExitCode127IsPermanent) {
  Cluster cluster = RunningJob("ExitCode");
  cluster.Exit("fmnist-worker-0", 127);
  cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonPodFailed);
  EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
              HasSubstr("exit code 127 (permanent under restartPolicy ExitCode)"));
}

TEST(RestartPolicyTest, ExitCode128IsRetryable) {
  Cluster cluster = RunningJob("ExitCode");
  cluster.Exit("fmnist-worker-0", 128);
  const Plan plan = cluster.Reconcile(At(2));
  ExpectGangRestart(cluster, plan, 1);
  EXPECT_THAT(cluster.ConditionOf(kRestarting)["message"].get<std::string>(),
              HasSubstr("exit code 128 (retryable under restartPolicy ExitCode)"));
}

TEST(RestartPolicyTest, AnEvictedPodIsRetriedUnderExitCode) {
  Cluster cluster = RunningJob("ExitCode");
  cluster.pods()["fmnist-worker-1"]["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
  cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Restarting");
  EXPECT_THAT(cluster.ConditionOf(kRestarting)["message"].get<std::string>(),
              HasSubstr("failed with no exit code (Evicted)"));
}

TEST(RestartPolicyTest, MembersStoppedBecauseAnotherFailedDoNotDecide) {
  Cluster cluster = RunningJob("ExitCode");
  // Worker 1 was OOM-killed; the others stopped with 3 when the coordinator failed the job.
  cluster.Exit("fmnist-worker-0", 3);
  cluster.Exit("fmnist-ps-0", 3);
  cluster.Exit("fmnist-worker-1", 137, "OOMKilled");
  cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Restarting");
  EXPECT_THAT(cluster.ConditionOf(kRestarting)["message"].get<std::string>(),
              ::testing::StartsWith("pod fmnist-worker-1 (worker-1) failed with exit code 137"));

  // A permanent cause next to them fails the job, naming only the cause.
  Cluster other = RunningJob("ExitCode");
  other.Exit("fmnist-worker-1", 3);
  other.Exit("fmnist-worker-0", 2);
  other.Reconcile(At(2));
  EXPECT_EQ(other.ConditionReason(kFailed), kReasonPodFailed);
  EXPECT_EQ(other.ConditionOf(kFailed)["message"],
            "pod fmnist-worker-0 (worker-0) failed with exit code 2 (permanent under "
            "restartPolicy ExitCode)");

  // Only 3s (the cause left no trace, e.g. a hung member): retried.
  Cluster hung = RunningJob("ExitCode");
  hung.Exit("fmnist-worker-1", 3);
  hung.Reconcile(At(2));
  EXPECT_EQ(hung.status()["state"], "Restarting");
}

TEST(RestartPolicyTest, MembersStoppedBecauseAnotherFailedWaitForTheCause) {
  // worker-1 and the server stopped with 3 at 10:00:02; the chief, whose failure it was, is
  // still telling them (it stays for a heartbeat timeout).
  Cluster cluster = RunningJob("ExitCode");
  cluster.Exit("fmnist-worker-1", 3, "Error", "", "2025-01-01T10:00:02Z");
  cluster.Exit("fmnist-ps-0", 3, "Error", "", "2025-01-01T10:00:02Z");
  Plan plan = cluster.Reconcile(At(3));
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_THAT(plan.deletes, IsEmpty());
  EXPECT_THAT(plan.events, IsEmpty());
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(*plan.requeue_after, std::chrono::seconds(29));  // kCauseGrace from the first stop
  // Then it ends with its own exit code, which decides: permanent under ExitCode.
  cluster.Exit("fmnist-worker-0", 2, "Error", "autodist-runtime: error: bad data",
               "2025-01-01T10:00:12Z");
  plan = cluster.Reconcile(At(13));
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonPodFailed);
  ASSERT_THAT(EventReasons(plan), ElementsAre(kReasonMemberFailed, kReasonPodFailed));
  EXPECT_EQ(plan.events[0].message,
            "worker-0 (pod fmnist-worker-0) failed first, with exit code 2 (Error): "
            "autodist-runtime: error: bad data");

  // A cause that never ends (hung): after kCauseGrace the 3s stand for it, retryable.
  Cluster hung = RunningJob("ExitCode");
  hung.Exit("fmnist-worker-1", 3, "Error", "", "2025-01-01T10:00:02Z");
  hung.Reconcile(At(20));
  EXPECT_EQ(hung.status()["state"], "Running");
  hung.Reconcile(At(33));
  EXPECT_EQ(hung.status()["state"], "Restarting");
}

TEST(RestartPolicyTest, APodDeletedWhileRunningRestartsTheGang) {
  Cluster cluster = RunningJob("OnFailure");
  cluster.RemovePod("fmnist-ps-0");
  const Plan plan = cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Restarting");
  EXPECT_THAT(cluster.ConditionOf(kRestarting)["message"].get<std::string>(),
              HasSubstr("pod fmnist-ps-0 (ps-0) disappeared while the job was running"));
  EXPECT_THAT(Deleted(plan), UnorderedElementsAre("fmnist-worker-0", "fmnist-worker-1"));
}

TEST(RestartPolicyTest, APodDeletedBeforeTheJobRanIsSimplyCreatedAgain) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  cluster.RemovePod("fmnist-ps-0");
  const Plan plan = cluster.Reconcile(At(1));
  EXPECT_THAT(Created(plan, "Pod"), ElementsAre("fmnist-ps-0"));
  EXPECT_EQ(cluster.status()["restartCount"], 0);
}

TEST(RestartPolicyTest, ASidecarPodIsJudgedByTheRuntimeContainer) {
  Cluster cluster = RunningJob("Never");
  // The user's sidecar keeps the pod Running; the runtime container already failed.
  nlohmann::json& status = cluster.pods()["fmnist-worker-1"]["status"];
  status["phase"] = "Running";
  status["containerStatuses"] = nlohmann::json::parse(R"([
    {"name": "log-shipper", "state": {"running": {}}},
    {"name": "autodist-runtime", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}])");
  cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonPodFailed);
  EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
              HasSubstr("exit code 1 (Error)"));
}

TEST(RestartPolicyTest, ALostStatusWriteDoesNotRestartTwice) {
  Cluster cluster = RunningJob("OnFailure");
  cluster.Exit("fmnist-worker-1", 137);
  const nlohmann::json status_before = cluster.status();
  cluster.Reconcile(At(2));  // deletes every pod
  cluster.Reconcile(At(3));  // creates the pods of restart 1
  ASSERT_EQ(cluster.pods().size(), 3U);
  // The status write of restart 1 is lost (an older status is observed): the pods' generation
  // is adopted rather than judged stale.
  cluster.status() = status_before;
  const Plan plan = cluster.Reconcile(At(4));
  EXPECT_THAT(plan.deletes, IsEmpty());
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.status()["restartCount"], 1);
}

TEST(RestartPolicyTest, VerdictOnlyWithTheChiefSucceeded) {
  const JobMembers members = ListMembers("j", "ns", 2, 1, AddressPolicy::Cluster());
  ObservedPod worker1;
  worker1.name = "j-worker-1";
  worker1.index = 1;
  worker1.phase = MemberPhase::kPodSucceeded;
  EXPECT_EQ(JudgeMembers({worker1}, members, RestartPolicy::kNever, false, At(0)).kind,
            Verdict::Kind::kActive);
  ObservedPod chief = worker1;
  chief.name = "j-worker-0";
  chief.index = 0;
  ObservedPod ps;
  ps.name = "j-ps-0";
  ps.role = Role::kParameterServer;
  ps.phase = MemberPhase::kPodFailed;
  ps.exit_code = 1;
  // Training finished: a parameter server failing on the way out does not undo it.
  EXPECT_EQ(JudgeMembers({chief, ps}, members, RestartPolicy::kNever, true, At(0)).kind,
            Verdict::Kind::kChiefSucceeded);
}

}  // namespace
}  // namespace autodist::reconcile
