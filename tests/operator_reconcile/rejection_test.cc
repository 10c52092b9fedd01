// Children the API server refuses to create: a refusal for good fails the job FailedCreate with
// the server's message (and stops the pods that could only wait for the missing member); a
// used-up quota keeps the job Pending with the reason while the controller tries again.
#include "operator/reconcile/rejection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/conditions.h"
#include "reconcile_test_support.h"

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

const std::string kPodSecurityMessage =
    "pods \"fmnist-worker-0\" is forbidden: violates PodSecurity \"restricted:latest\": "
    "allowPrivilegeEscalation != false (container \"autodist-runtime\" must set "
    "securityContext.allowPrivilegeEscalation=false)";

Rejection Refusal(const nlohmann::json& object, int code, const std::string& reason,
                  const std::string& message) {
  return Rejection{object["kind"], object["metadata"]["name"],    code, reason,
                   message,        RefusalMayClear(code, message)};
}

TEST(RejectionTest, CodesThatAreTheRequestsOwnFault) {
  for (const int code : {400, 403, 413, 415, 422}) EXPECT_TRUE(IsRejectionCode(code)) << code;
  // Credentials, absence, timeouts, conflicts, throttling and the server's own failures: retried.
  for (const int code : {200, 401, 404, 408, 409, 410, 429, 500, 503}) {
    EXPECT_FALSE(IsRejectionCode(code)) << code;
  }
}

TEST(RejectionTest, OnlyAUsedUpQuotaMayClear) {
  EXPECT_TRUE(RefusalMayClear(403,
                              "pods \"p\" is forbidden: exceeded quota: compute, requested: "
                              "pods=1, used: pods=4, limited: pods=4"));
  EXPECT_FALSE(RefusalMayClear(403,
                               "pods \"p\" is forbidden: failed quota: compute: must specify "
                               "limits.cpu for: autodist-runtime"));
  EXPECT_FALSE(RefusalMayClear(403, kPodSecurityMessage));
  EXPECT_FALSE(RefusalMayClear(422, "exceeded quota"));
  EXPECT_EQ(DescribeRejection({"ConfigMap", "c", 422, "Invalid", "data: Too long"}),
            "the API server refused to create ConfigMap c (422 Invalid): data: Too long");
}

TEST(RejectionTest, APodRefusedForGoodFailsTheJobWithTheServersMessage) {
  Cluster cluster(JobObject());
  cluster.refuse = [](const nlohmann::json& object) -> std::optional<Rejection> {
    if (object["kind"] != "Pod") return std::nullopt;
    return Refusal(object, 403, "Forbidden", kPodSecurityMessage);
  };
  const Plan first = cluster.Reconcile(At(0));
  ASSERT_TRUE(cluster.rejection().has_value());
  EXPECT_THAT(cluster.pods(), IsEmpty());

  const Plan failed = cluster.Reconcile(At(1));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonFailedCreate);
  const std::string message = cluster.ConditionOf(kFailed)["message"];
  EXPECT_THAT(message, HasSubstr("the API server refused to create Pod fmnist-worker-0 (403 "
                                 "Forbidden): "));
  EXPECT_THAT(message, HasSubstr(kPodSecurityMessage));
  EXPECT_THAT(EventReasons(failed), ElementsAre(kReasonFailedCreate));
  EXPECT_EQ(failed.events[0].type, kEventWarning);
  EXPECT_THAT(failed.creates, IsEmpty());
  EXPECT_FALSE(cluster.status()["completionTime"].is_null());

  // Finished: nothing is tried again, nothing announced again.
  const Plan after = cluster.Reconcile(At(30));
  EXPECT_THAT(after.creates, IsEmpty());
  EXPECT_THAT(after.events, IsEmpty());
  EXPECT_FALSE(after.status.has_value());
}

TEST(RejectionTest, TheMembersAlreadyMadeStopWhenOneIsRefused) {
  Cluster cluster(JobObject({{"runPolicy", {{"cleanPodPolicy", "None"}}}}));
  cluster.refuse = [](const nlohmann::json& object) -> std::optional<Rejection> {
    if (object["metadata"]["name"] != "fmnist-worker-1") return std::nullopt;
    return Refusal(object, 422, "Invalid",
                   "Pod \"fmnist-worker-1\" is invalid: spec.priorityClassName: Invalid value");
  };
  cluster.Reconcile(At(0));
  ASSERT_EQ(cluster.pods().size(), 1U);  // worker 0; the refusal ended the creates
  cluster.SetAllPhases("Running");
  const Plan failed = cluster.Reconcile(At(1));
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonFailedCreate);
  // Whatever cleanPodPolicy keeps: the chief could only wait for the member it will never get.
  EXPECT_THAT(Deleted(failed), ElementsAre("fmnist-worker-0"));
}

TEST(RejectionTest, AUsedUpQuotaKeepsTheJobPendingUntilItAdmitsThePods) {
  Cluster cluster(JobObject());
  int refusals_left = 3;
  const std::string quota =
      "pods \"fmnist-worker-0\" is forbidden: exceeded quota: team-quota, requested: pods=1, "
      "used: pods=10, limited: pods=10";
  cluster.refuse = [&](const nlohmann::json& object) -> std::optional<Rejection> {
    if (object["kind"] != "Pod" || refusals_left == 0) return std::nullopt;
    --refusals_left;
    return Refusal(object, 403, "Forbidden", quota);
  };
  cluster.Reconcile(At(0));
  const Plan pending = cluster.Reconcile(At(1));
  EXPECT_EQ(cluster.ConditionStatus(kRunning), "False");
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonFailedCreate);
  EXPECT_THAT(std::string(cluster.ConditionOf(kRunning)["message"]),
              HasSubstr("exceeded quota: team-quota"));
  EXPECT_THAT(EventReasons(pending), ElementsAre(kReasonFailedCreate));
  EXPECT_FALSE(cluster.ConditionOf(kFailed).contains("status"));
  // Every reconcile tries the pods again; the same refusal changes nothing and says nothing.
  EXPECT_THAT(Created(pending, "Pod"),
              ElementsAre("fmnist-worker-0", "fmnist-worker-1", "fmnist-ps-0"));
  const Plan again = cluster.Reconcile(At(2));
  EXPECT_FALSE(again.status.has_value());
  EXPECT_THAT(again.events, IsEmpty());

  // The quota admits them: the pods are made and the job runs.
  cluster.Reconcile(At(3));
  ASSERT_FALSE(cluster.rejection().has_value());
  EXPECT_EQ(cluster.pods().size(), 3U);
  cluster.Reconcile(At(4));
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonPodsPending);
  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(5));
  EXPECT_EQ(cluster.status()["state"], "Running");
}

TEST(RejectionTest, AChildOfAnEarlierJobOfTheSameNameIsNeverUsed) {
  Cluster cluster(JobObject());
  // The ConfigMap of a deleted job of the same name, which the garbage collector has not removed.
  cluster.config_map() =
      nlohmann::json{{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata",
                      {{"name", "fmnist-autodist"},
                       {"namespace", "ml"},
                       {"uid", "old-config-map"},
                       {"ownerReferences",
                        {{{"apiVersion", "autodist.io/v1alpha1"},
                          {"kind", "AutoDistJob"},
                          {"name", "fmnist"},
                          {"uid", "old-job-uid"},
                          {"controller", true}}}}}},
                     {"data", {{"job.yaml", "the old job"}, {"summary.txt", "an old summary"}}}};
  cluster.refuse = [&](const nlohmann::json& object) -> std::optional<Rejection> {
    if (object["kind"] != "ConfigMap" || !cluster.config_map().has_value()) return std::nullopt;
    return Rejection{"ConfigMap",
                     "fmnist-autodist",
                     409,
                     "AlreadyExists",
                     "ConfigMap fmnist-autodist already exists and is controlled by AutoDistJob "
                     "fmnist (uid old-job-uid), an earlier job of this name that was deleted; "
                     "waiting for the garbage collector to remove it",
                     true};
  };
  // The old ConfigMap counts as missing: the job's own is created first, and the pods after it
  // are not tried once its name turns out to be taken.
  const Plan first = cluster.Reconcile(At(0));
  EXPECT_THAT(Created(first, "ConfigMap"), ElementsAre("fmnist-autodist"));
  EXPECT_THAT(cluster.pods(), IsEmpty());
  EXPECT_EQ((*cluster.config_map())["metadata"]["uid"], "old-config-map");

  // Compiled again (its ConfigMap is still missing), without saying so again.
  const Plan waiting = cluster.Reconcile(At(1));
  EXPECT_THAT(EventReasons(waiting), ElementsAre(kReasonFailedCreate));
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonFailedCreate);
  EXPECT_THAT(std::string(cluster.ConditionOf(kRunning)["message"]),
              HasSubstr("an earlier job of this name that was deleted"));
  EXPECT_THAT(cluster.pods(), IsEmpty());
  EXPECT_TRUE(cluster.ConditionOf(kFailed).is_object() &&
              !cluster.ConditionOf(kFailed).contains("status"));

  // Collected: the job's own ConfigMap and its pods follow.
  cluster.config_map().reset();
  cluster.Reconcile(At(2));
  ASSERT_TRUE(cluster.config_map().has_value());
  EXPECT_EQ((*cluster.config_map())["metadata"]["ownerReferences"][0]["uid"], "job-uid");
  EXPECT_EQ(cluster.pods().size(), 3U);
}

}  // namespace
}  // namespace autodist::reconcile
