// The whole reconcile of a job: its life from creation to success, idempotency, invalid specs,
// models that are missing or broken, progress, and objects being deleted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/conditions.h"
#include "operator/reconcile/reconciler.h"
#include "reconcile_test_support.h"
#include "runtime/common/base64.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/graph/graph_item.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/step_profile.h"
#include "tests/strategy/test_support.h"

namespace autodist::reconcile {
namespace {

using testing::At;
using testing::Cluster;
using testing::Created;
using testing::Deleted;
using ::testing::ElementsAre;
using testing::EventReasons;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::JobObject;
using ::testing::Not;

TEST(ReconcileTest, FirstReconcileCreatesEveryChildAndCompiles) {
  Cluster cluster(JobObject());
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(Created(plan, "ConfigMap"), ElementsAre("fmnist-autodist"));
  EXPECT_THAT(Created(plan, "Service"), ElementsAre("fmnist"));
  EXPECT_THAT(Created(plan, "Pod"),
              ElementsAre("fmnist-worker-0", "fmnist-worker-1", "fmnist-ps-0"));
  EXPECT_THAT(Created(plan, "PodGroup"), IsEmpty());  // no gang scheduler configured
  EXPECT_THAT(plan.deletes, IsEmpty());
  // The ConfigMap comes first: the pods mount it.
  EXPECT_EQ(plan.creates.front()["kind"], "ConfigMap");

  ASSERT_TRUE(plan.status.has_value());
  const nlohmann::json& status = *plan.status;
  EXPECT_EQ(status["state"], "Compiled");
  EXPECT_EQ(status["observedGeneration"], 1);
  EXPECT_EQ(status["startTime"], "2025-01-01T10:00:00Z");
  EXPECT_EQ(status["restartCount"], 0);
  EXPECT_EQ(status["strategy"]["builder"], "PSLoadBalancing");
  EXPECT_EQ(status["strategy"]["workers"], 2);
  EXPECT_EQ(status["strategy"]["parameterServers"], 1);
  EXPECT_EQ(status["strategy"]["replicas"], 2);
  EXPECT_GT(status["strategy"]["variables"].get<int>(), 0);
  EXPECT_EQ(status["strategy"]["partitioned"], 0);
  EXPECT_GT(status["strategy"]["bytesPerPs"]["ps-0"].get<int64_t>(), 0);
  EXPECT_EQ(status["replicaStatuses"]["Worker"],
            (nlohmann::json{{"active", 0}, {"succeeded", 0}, {"failed", 0}}));
  EXPECT_TRUE(status["replicaStatuses"].contains("PS"));
  EXPECT_EQ(cluster.ConditionStatus(kCreated), "True");
  EXPECT_EQ(cluster.ConditionReason(kCompiled), kReasonStrategyCompiled);
  EXPECT_THAT(cluster.ConditionOf(kCompiled)["message"].get<std::string>(),
              HasSubstr("PSLoadBalancing: "));
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonPodsPending);
  EXPECT_EQ(cluster.ConditionOf(kRunning)["message"], "0 of 3 pods are running");
  EXPECT_THAT(EventReasons(plan),
              ElementsAre(kReasonJobCreated, kReasonStrategyCompiled, kReasonBuilderChosen));
  // Why this builder: the manifest names it.
  EXPECT_EQ(plan.events[2].message,
            "PSLoadBalancing as spec.strategy.builder names it (2 workers with 0 GPU(s) each, 1 "
            "parameter server(s))");
  EXPECT_FALSE(plan.requeue_after.has_value());
}

TEST(ReconcileTest, LifeOfAJobToSuccess) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  Plan plan = cluster.Reconcile(At(5));
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_EQ(cluster.ConditionStatus(kRunning), "True");
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonAllPodsRunning);
  EXPECT_EQ(cluster.ConditionOf(kRunning)["lastTransitionTime"], "2025-01-01T10:00:05Z");
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonAllPodsRunning));
  EXPECT_EQ(cluster.status()["replicaStatuses"]["Worker"]["active"], 2);
  EXPECT_EQ(cluster.status()["replicaStatuses"]["PS"]["active"], 1);

  // A worker other than the chief finishing first changes nothing but the counts.
  cluster.Exit("fmnist-worker-1", 0);
  plan = cluster.Reconcile(At(8));
  EXPECT_EQ(cluster.status()["state"], "Running");
  EXPECT_EQ(cluster.status()["replicaStatuses"]["Worker"]["succeeded"], 1);
  EXPECT_THAT(plan.events, IsEmpty());

  cluster.Exit("fmnist-worker-0", 0);
  plan = cluster.Reconcile(At(10));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.ConditionReason(kSucceeded), kReasonJobSucceeded);
  EXPECT_THAT(cluster.ConditionOf(kSucceeded)["message"].get<std::string>(),
              HasSubstr("fmnist-worker-0 (worker-0, the chief)"));
  EXPECT_EQ(cluster.ConditionStatus(kRunning), "False");
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonJobSucceeded);
  EXPECT_EQ(cluster.status()["completionTime"], "2025-01-01T10:00:10Z");
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonJobSucceeded));
  // cleanPodPolicy None (the default): the pods stay, for their logs.
  EXPECT_THAT(plan.deletes, IsEmpty());

  // Later reconciles of the finished job change nothing.
  EXPECT_FALSE(cluster.Reconcile(At(100)).HasActions());
}

TEST(ReconcileTest, MembersFinishingAfterTheChiefAreStillCounted) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  cluster.progress() = Progress{25, 30, 0, 0.4, 100.0, std::nullopt};
  cluster.Reconcile(At(1));
  cluster.Exit("fmnist-worker-0", 0);
  cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.status()["replicaStatuses"]["Worker"]["active"], 1);
  // The chief exits 0 only after its last step: a succeeded job shows all of them, whatever the
  // last progress read saw.
  EXPECT_EQ(cluster.status()["progress"]["step"], 30);

  cluster.Exit("fmnist-worker-1", 0);
  cluster.Exit("fmnist-ps-0", 0);
  cluster.Reconcile(At(3));
  EXPECT_EQ(cluster.status()["replicaStatuses"]["Worker"],
            (nlohmann::json{{"active", 0}, {"succeeded", 2}, {"failed", 0}}));
  EXPECT_EQ(cluster.status()["replicaStatuses"]["PS"]["succeeded"], 1);
  // Pods deleted later (by hand, a TTL, clean-up) do not erase the record.
  cluster.RemovePod("fmnist-worker-1");
  cluster.Reconcile(At(4));
  EXPECT_EQ(cluster.status()["replicaStatuses"]["Worker"]["succeeded"], 2);
}

TEST(ReconcileTest, AShortJobSeenOnlyDuringItsRendezvousStillShowsEveryStep) {
  Cluster cluster(JobObject());  // training.steps 20
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  // The only progress read came before the coordinator knew the total.
  cluster.progress() =
      Progress{0, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  cluster.Reconcile(At(1));
  cluster.progress().reset();
  cluster.Exit("fmnist-worker-0", 0);
  cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(cluster.status()["progress"]["step"], 20);
  EXPECT_EQ(cluster.status()["progress"]["totalSteps"], 20);
}

// The keys of a new TLS Secret are the one random part of a plan (tls_secret.h): the same names,
// key for key, but new key material each time.
std::vector<nlohmann::json> WithoutKeyMaterial(std::vector<nlohmann::json> creates) {
  for (nlohmann::json& object : creates) {
    if (object["kind"] != "Secret") continue;
    for (auto& [key, value] : object["data"].items()) value = "(" + key + ")";
  }
  return creates;
}

TEST(ReconcileTest, TheSameObservedStateGivesTheSamePlan) {
  Cluster cluster(JobObject());
  const Plan first = cluster.Reconcile(At(0), false);
  const Plan second = cluster.Reconcile(At(0), false);
  ASSERT_TRUE(first.status.has_value() && second.status.has_value());
  EXPECT_EQ(*first.status, *second.status);
  EXPECT_EQ(WithoutKeyMaterial(first.creates), WithoutKeyMaterial(second.creates));
  EXPECT_NE(first.creates, second.creates) << "two new Secrets hold the same keys";
  EXPECT_EQ(first.deletes, second.deletes);
  EXPECT_EQ(first.events, second.events);
}

TEST(ReconcileTest, ACarriedOutPlanLeavesNothingToRepeat) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  // The created children are observed now: nothing is created again and no event repeated;
  // only the status counts the pods it now sees.
  Plan again = cluster.Reconcile(At(1));
  EXPECT_THAT(again.creates, IsEmpty());
  EXPECT_THAT(again.deletes, IsEmpty());
  EXPECT_THAT(again.events, IsEmpty());
  ASSERT_TRUE(again.status.has_value());
  EXPECT_EQ((*again.status)["replicaStatuses"]["Worker"]["active"], 2);
  // Nothing observed changed since: nothing at all to do.
  again = cluster.Reconcile(At(2));
  EXPECT_FALSE(again.HasActions()) << again.status.value_or(nlohmann::json()).dump(2);
  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(3));
  EXPECT_FALSE(cluster.Reconcile(At(4)).HasActions());
}

TEST(ReconcileTest, ALaggingCacheCreatesNothingTwiceWhenObjectsShowUp) {
  Cluster cluster(JobObject());
  const Plan plan = cluster.Reconcile(At(0), false);
  // The operator restarted after creating only the ConfigMap and one pod.
  Plan partial = plan;
  ASSERT_EQ(plan.creates[4]["metadata"]["name"], "fmnist-worker-0");
  partial.creates = {plan.creates[0], plan.creates[4]};
  partial.status.reset();
  cluster.Apply(partial);
  const Plan next = cluster.Reconcile(At(1));
  EXPECT_THAT(Created(next, "ConfigMap"), IsEmpty());
  EXPECT_THAT(Created(next, "Service"), ElementsAre("fmnist"));
  EXPECT_THAT(Created(next, "NetworkPolicy"), ElementsAre("fmnist"));
  EXPECT_THAT(Created(next, "Secret"), ElementsAre("fmnist-tls"));
  EXPECT_THAT(Created(next, "Pod"), ElementsAre("fmnist-worker-1", "fmnist-ps-0"));
}

TEST(ReconcileTest, InvalidSpecFailsTheJobNamingTheFieldAndCreatesNothing) {
  Cluster cluster(JobObject({{"resources", {{"workers", "two"}}}}));
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_THAT(plan.deletes, IsEmpty());
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonInvalidSpec);
  EXPECT_EQ(cluster.ConditionOf(kFailed)["message"],
            "spec.resources.workers: expected an integer >= 1, got \"two\"");
  EXPECT_EQ(cluster.ConditionOf(kFailed)["observedGeneration"], 1);
  EXPECT_EQ(cluster.status()["completionTime"], "2025-01-01T10:00:00Z");
  ASSERT_EQ(plan.events.size(), 1U);
  EXPECT_EQ(plan.events[0].type, kEventWarning);
  EXPECT_EQ(plan.events[0].reason, kReasonInvalidSpec);
  EXPECT_FALSE(cluster.Reconcile(At(5)).HasActions());
}

TEST(ReconcileTest, RulesAcrossFieldsAreInvalidSpecToo) {
  Cluster cluster(JobObject({{"strategy", {{"builder", "AllReduce"}}}}));
  cluster.Reconcile(At(0));
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonInvalidSpec);
  EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
              HasSubstr("spec.resources.parameterServers: builder AllReduce all-reduces"));
}

TEST(ReconcileTest, APodNameTooLongForAHostnameIsInvalidSpec) {
  nlohmann::json job = JobObject();
  job["metadata"]["name"] = std::string(55, 'a');
  Cluster cluster(job);
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonInvalidSpec);
  EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
              HasSubstr("metadata.name: \"" + std::string(55, 'a') + "\" is too long"));
}

TEST(ReconcileTest, AnInvalidSpecIsJudgedAgainAfterAnEdit) {
  Cluster cluster(JobObject({{"training", {{"optimizer", {{"name", "sgd"}, {"lr", -1}}}}}}));
  cluster.Reconcile(At(0));
  ASSERT_EQ(cluster.ConditionReason(kFailed), kReasonInvalidSpec);
  // Still the same generation: nothing happens.
  EXPECT_FALSE(cluster.Reconcile(At(1)).HasActions());
  // The user fixes the spec: the API server bumps the generation.
  cluster.job()["spec"]["training"]["optimizer"]["lr"] = 0.1;
  cluster.job()["metadata"]["generation"] = 2;
  const Plan plan = cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.ConditionOf(kFailed), nlohmann::json::object());
  EXPECT_FALSE(cluster.status().contains("completionTime"));
  EXPECT_EQ(cluster.status()["state"], "Compiled");
  EXPECT_EQ(Created(plan, "Pod").size(), 3U);
}

TEST(ReconcileTest, AModelConfigMapThatIsNotThereYetIsWaitedFor) {
  Cluster cluster(JobObject({{"model", {{"path", nullptr}, {"configMap", {{"name", "mlp"}}}}}}));
  Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.status()["state"], "Created");
  EXPECT_EQ(cluster.ConditionStatus(kCompiled), "False");
  EXPECT_EQ(cluster.ConditionReason(kCompiled), kReasonModelNotFound);
  EXPECT_EQ(cluster.ConditionOf(kCompiled)["message"],
            "spec.model.configMap: ConfigMap ml/mlp does not exist");
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(30));
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonJobCreated, kReasonModelNotFound));
  // Waiting again announces nothing new.
  plan = cluster.Reconcile(At(30));
  EXPECT_FALSE(plan.HasActions());
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(30));

  const std::string onnx = ReadFileBytes(testing::kModelPath, "model");
  cluster.models().AddConfigMap("ml/mlp", {{"binaryData", {{"model.onnx", EncodeBase64(onnx)}}}});
  plan = cluster.Reconcile(At(60));
  EXPECT_EQ(cluster.ConditionStatus(kCompiled), "True");
  EXPECT_EQ(Created(plan, "Pod").size(), 3U);
  EXPECT_EQ(plan.creates[0]["data"]["job.yaml"].get<std::string>().find("configMap"),
            std::string::npos);
}

TEST(ReconcileTest, AModelThatIsNoModelFailsTheJob) {
  Cluster cluster(JobObject({{"model", {{"path", nullptr}, {"configMap", {{"name", "mlp"}}}}}}));
  cluster.models().AddConfigMap("ml/mlp", {{"data", {{"model.onnx", "not a model"}}}});
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonInvalidModel);
  EXPECT_EQ(cluster.ConditionReason(kCompiled), kReasonInvalidModel);
  EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
              HasSubstr("model in ConfigMap ml/mlp key 'model.onnx'"));
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonJobCreated, kReasonInvalidModel));
}

TEST(ReconcileTest, AModelWithOpsNoKernelRunsFailsTheJobWithoutPods) {
  // A PyTorch LSTM export: pods would start, fail on the LSTM op and be restarted until the
  // backoff limit; the preflight fails the job before any exists.
  Cluster cluster(JobObject({{"model", {{"path", testing::kFixtures + "/models/lstm.onnx"}}}}));
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonUnsupportedModel);
  EXPECT_EQ(cluster.ConditionReason(kCompiled), kReasonUnsupportedModel);
  const std::string message = cluster.ConditionOf(kFailed)["message"].get<std::string>();
  EXPECT_THAT(message, HasSubstr("has ops the cpu backend has no kernel for: "));
  EXPECT_THAT(message, HasSubstr("LSTM (opset 14: node"));
  EXPECT_THAT(message, HasSubstr("ConstantOfShape (opset 14: node"));
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonJobCreated, kReasonUnsupportedModel));
}

TEST(ReconcileTest, GpuWorkersAreCheckedAgainstTheCudaKernels) {
  // The embedding model has a kernel for every op on both backends: GPU workers get pods.
  const std::string embedding = testing::kFixtures + "/models/embedding.onnx";
  Cluster gpu(JobObject(
      {{"model", {{"path", embedding}}}, {"resources", {{"workers", 2}, {"gpusPerWorker", 1}}}}));
  EXPECT_THAT(gpu.Reconcile(At(0)).creates, Not(IsEmpty()));
  EXPECT_EQ(gpu.ConditionStatus(kCompiled), "True");
  // The LSTM export's ops have none: the message names the backend the workers would use.
  const std::string lstm = testing::kFixtures + "/models/lstm.onnx";
  for (const int gpus : {0, 1}) {
    Cluster cluster(JobObject(
        {{"model", {{"path", lstm}}}, {"resources", {{"workers", 2}, {"gpusPerWorker", gpus}}}}));
    const Plan plan = cluster.Reconcile(At(0));
    EXPECT_THAT(plan.creates, IsEmpty());
    EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonUnsupportedModel);
    EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
                HasSubstr(gpus > 0 ? "has ops the cuda backend has no kernel for: "
                                   : "has ops the cpu backend has no kernel for: "));
  }
}

TEST(ReconcileTest, ModelBinaryDataThatIsNotBase64FailsTheJob) {
  Cluster cluster(JobObject({{"model", {{"path", nullptr}, {"configMap", {{"name", "mlp"}}}}}}));
  cluster.models().AddConfigMap("ml/mlp", {{"binaryData", {{"model.onnx", "***"}}}});
  cluster.Reconcile(At(0));
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonInvalidModel);
  EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
              HasSubstr("is not base64"));
}

TEST(ReconcileTest, AMissingModelFileIsWaitedFor) {
  Cluster cluster(JobObject({{"model", {{"path", "/nonexistent/model.onnx"}}}}));
  cluster.Reconcile(At(0));
  EXPECT_EQ(cluster.ConditionReason(kCompiled), kReasonModelNotFound);
  EXPECT_THAT(cluster.ConditionOf(kCompiled)["message"].get<std::string>(),
              HasSubstr("spec.model.path: model '/nonexistent/model.onnx' does not exist"));
}

TEST(ReconcileTest, ACompilerRejectionFailsTheJob) {
  Cluster cluster(JobObject({{"strategy", {{"colocation", {{"no.such.variable"}}}}}}));
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonCompileFailed);
  EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
              HasSubstr("no.such.variable"));
}

TEST(ReconcileTest, AConfigMapPastTheApiServersLimitFailsTheJobBeforeAnythingIsMade) {
  // A training file list long enough that the manifest alone passes 1 MiB: the API server would
  // answer the ConfigMap's create with a 422.
  nlohmann::json train = nlohmann::json::object();
  for (int i = 0; i < 9000; ++i) {
    train["input_" + std::to_string(i)] = "/data/shards/" + std::string(100, 'x') + ".npy";
  }
  Cluster cluster(JobObject({{"data", {{"format", "files"}, {"train", train}}}}));
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonCompileFailed);
  EXPECT_EQ(cluster.ConditionStatus(kCompiled), "False");
  const std::string message = cluster.ConditionOf(kFailed)["message"];
  EXPECT_THAT(message, HasSubstr("the job's ConfigMap fmnist-autodist would hold 1."));
  EXPECT_THAT(message, HasSubstr("MiB (job.yaml 1."));  // the largest key first
  EXPECT_THAT(message, HasSubstr("more than the 1048576 bytes the API server stores"));
}

TEST(ReconcileTest, AutoReportsTheBuilderItChoseAndItsPredictedStep) {
  Cluster cluster(JobObject({{"strategy", nullptr}}));
  const Plan plan = cluster.Reconcile(At(0));
  const nlohmann::json& strategy = cluster.status()["strategy"];
  const auto& names = strategy::BuilderNames();
  EXPECT_NE(std::find(names.begin(), names.end(), strategy["builder"].get<std::string>()),
            names.end());
  EXPECT_NE(strategy["builder"], "Auto");
  EXPECT_GT(strategy["predictedStepMicroseconds"].get<int64_t>(), 0);
  const auto chosen = std::find_if(plan.events.begin(), plan.events.end(), [](const Event& event) {
    return event.reason == kReasonBuilderChosen;
  });
  ASSERT_NE(chosen, plan.events.end());
  EXPECT_THAT(chosen->message, HasSubstr("Auto chose "));
  // A named builder has no prediction to show.
  Cluster named(JobObject());
  named.Reconcile(At(0));
  EXPECT_FALSE(named.status()["strategy"].contains("predictedStepMicroseconds"));
}

// The operator reads the profile where the manifest says, compiles with it, and gives the chief
// the same bytes in the job's ConfigMap, with the pods' manifest pointing there.
TEST(ReconcileTest, AProfileConfigMapIsWaitedForThenReadAndHandedToThePods) {
  Cluster cluster(JobObject(
      {{"strategy", {{"builder", "Auto"}, {"profile", {{"configMap", {{"name", "prof"}}}}}}}}));
  Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.ConditionReason(kCompiled), kReasonProfileNotFound);
  EXPECT_EQ(cluster.ConditionOf(kCompiled)["message"],
            "spec.strategy.profile.configMap: ConfigMap ml/prof does not exist");
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(30));

  const std::vector<graph::Variable> variables =
      graph::GraphItem::Load(testing::kModelPath).TrainableVariables();
  strategy::StepProfile profile = strategy::EstimateStepProfile(variables, 32, 1, false);
  profile.source = "measured";
  const std::string json = strategy::StepProfileToJson(profile);
  cluster.models().AddConfigMap("ml/prof", {{"data", {{"profile.json", json}}}});
  plan = cluster.Reconcile(At(30));
  EXPECT_EQ(cluster.ConditionStatus(kCompiled), "True");
  const auto made =
      std::find_if(plan.creates.begin(), plan.creates.end(),
                   [](const nlohmann::json& object) { return object["kind"] == "ConfigMap"; });
  ASSERT_NE(made, plan.creates.end());
  const nlohmann::json& config_map = *made;
  EXPECT_EQ(config_map["data"]["profile.json"], json);
  const std::string manifest = config_map["data"]["job.yaml"];
  EXPECT_THAT(manifest, HasSubstr("path: /etc/autodist/profile.json"));
  EXPECT_THAT(manifest, ::testing::Not(HasSubstr("prof\n")));
}

TEST(ReconcileTest, AProfileOfAnotherModelFailsTheJob) {
  Cluster cluster(JobObject(
      {{"strategy", {{"builder", "Auto"}, {"profile", {{"configMap", {{"name", "prof"}}}}}}}}));
  strategy::StepProfile other =
      strategy::EstimateStepProfile({strategy::testing::FloatVariable("w", {4})}, 32, 1, false);
  cluster.models().AddConfigMap("ml/prof",
                                {{"data", {{"profile.json", strategy::StepProfileToJson(other)}}}});
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(plan.creates, IsEmpty());
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonCompileFailed);
  EXPECT_THAT(cluster.ConditionOf(kFailed)["message"].get<std::string>(),
              HasSubstr("it was measured on another model"));
}

TEST(ReconcileTest, ProgressIsReportedAndOnlyRewrittenWhenItMoves) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(1));
  cluster.progress() = Progress{120, 2000, 1, 0.53, 3120.5, std::nullopt};
  Plan plan = cluster.Reconcile(At(2));
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(cluster.status()["progress"],
            (nlohmann::json{{"step", 120},
                            {"totalSteps", 2000},
                            {"epoch", 1},
                            {"loss", 0.53},
                            {"samplesPerSecond", 3120.5},
                            {"lastUpdateTime", "2025-01-01T10:00:02Z"}}));
  EXPECT_FALSE(cluster.status().contains("resumedFromStep"));
  EXPECT_FALSE(cluster.Reconcile(At(3)).HasActions());
  cluster.progress()->step = 140;
  cluster.progress()->resumed_from_step = 100;
  plan = cluster.Reconcile(At(4));
  EXPECT_EQ(cluster.status()["progress"]["step"], 140);
  EXPECT_EQ(cluster.status()["progress"]["lastUpdateTime"], "2025-01-01T10:00:04Z");
  EXPECT_EQ(cluster.status()["resumedFromStep"], 100);
  // Announced once, when the resume point appears (or changes).
  ASSERT_THAT(EventReasons(plan), ElementsAre(kReasonResumedFromCheckpoint));
  EXPECT_EQ(plan.events[0].message, "the job resumed from the checkpoint of step 100");
  EXPECT_EQ(plan.events[0].type, kEventNormal);
  cluster.progress()->step = 150;
  EXPECT_THAT(EventReasons(cluster.Reconcile(At(5))), IsEmpty());
}

TEST(ReconcileTest, AJobBeingDeletedIsLeftToGarbageCollection) {
  nlohmann::json job = JobObject();
  job["metadata"]["deletionTimestamp"] = "2025-01-01T10:00:00Z";
  Cluster cluster(job);
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_FALSE(plan.HasActions());
  EXPECT_FALSE(plan.requeue_after.has_value());
}

TEST(ReconcileTest, PodsOfOtherOwnersAreIgnored) {
  Cluster cluster(JobObject());
  cluster.Settle(At(0));
  // A pod with the job's labels but another controller (a job of the same name, deleted and
  // re-created) counts for nothing.
  nlohmann::json stray = cluster.pod("fmnist-worker-0");
  stray["metadata"]["name"] = "stray";
  stray["metadata"]["ownerReferences"][0]["uid"] = "other-uid";
  stray["status"] = {{"phase", "Failed"}};
  cluster.pods()["stray"] = stray;
  const Plan plan = cluster.Reconcile(At(1));
  EXPECT_FALSE(plan.HasActions());
  EXPECT_EQ(cluster.status()["state"], "Compiled");
}

TEST(ReconcileTest, AnObjectWithoutANameIsAnError) {
  Cluster cluster(nlohmann::json{{"metadata", nlohmann::json::object()}});
  EXPECT_THROW(cluster.Reconcile(At(0)), autodist::Error);
}

}  // namespace
}  // namespace autodist::reconcile
