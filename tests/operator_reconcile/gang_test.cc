// Gang scheduling: a PodGroup with minMember = all pods, the job's scheduler, and the PodGroup
// released when the job finishes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "reconcile_test_support.h"
#include "runtime/common/error.h"

namespace autodist::reconcile {
namespace {

using testing::At;
using testing::Cluster;
using testing::Created;
using testing::Deleted;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::JobObject;

const nlohmann::json kScheduling = {{"runPolicy",
                                     {{"schedulingPolicy",
                                       {{"schedulerName", "scheduler-plugins-scheduler"},
                                        {"queue", "research"},
                                        {"priorityClass", "high"},
                                        {"scheduleTimeoutSeconds", 120}}}}}};

ReconcilerOptions Gang(GangScheduler scheduler) {
  ReconcilerOptions options = testing::TestOptions();
  options.gang_scheduler = scheduler;
  return options;
}

TEST(GangTest, SchedulerPluginsPodGroupHoldsEveryPod) {
  Cluster cluster(JobObject(kScheduling), Gang(GangScheduler::kSchedulerPlugins));
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(Created(plan, "PodGroup"), ElementsAre("fmnist"));
  ASSERT_TRUE(cluster.pod_group().has_value());
  const nlohmann::json& group = *cluster.pod_group();
  EXPECT_EQ(group["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(group["spec"], nlohmann::json::parse(R"({"minMember": 3,
                                                      "scheduleTimeoutSeconds": 120})"));
  EXPECT_EQ(group["metadata"]["ownerReferences"][0]["uid"], "job-uid");
  // The PodGroup is created before the pods that join it.
  const auto first_pod = std::find_if(plan.creates.begin(), plan.creates.end(),
                                      [](const nlohmann::json& o) { return o["kind"] == "Pod"; });
  const auto pod_group =
      std::find_if(plan.creates.begin(), plan.creates.end(),
                   [](const nlohmann::json& o) { return o["kind"] == "PodGroup"; });
  EXPECT_LT(pod_group - plan.creates.begin(), first_pod - plan.creates.begin());
  for (const auto& [name, pod] : cluster.pods()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler");
    EXPECT_EQ(pod["spec"]["priorityClassName"], "high");
    EXPECT_EQ(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "fmnist");
  }
}

TEST(GangTest, VolcanoPodGroupCarriesQueueAndPriority) {
  Cluster cluster(JobObject(kScheduling), Gang(GangScheduler::kVolcano));
  cluster.Reconcile(At(0));
  const nlohmann::json& group = *cluster.pod_group();
  EXPECT_EQ(group["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(group["kind"], "PodGroup");
  EXPECT_EQ(group["spec"], nlohmann::json::parse(R"({"minMember": 3, "queue": "research",
                                                      "priorityClassName": "high"})"));
  EXPECT_EQ(cluster.pod("fmnist-ps-0")["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
            "fmnist");
}

TEST(GangTest, WithoutAGangSchedulerTheSchedulerIsStillUsed) {
  Cluster cluster(JobObject(kScheduling), Gang(GangScheduler::kNone));
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(Created(plan, "PodGroup"), IsEmpty());
  EXPECT_EQ(cluster.pod("fmnist-worker-0")["spec"]["schedulerName"], "scheduler-plugins-scheduler");
  EXPECT_FALSE(cluster.pod("fmnist-worker-0")["metadata"]["labels"].contains(
      "scheduling.x-k8s.io/pod-group"));
}

TEST(GangTest, AJobWithoutSchedulingPolicyGetsNoPodGroup) {
  Cluster cluster(JobObject(), Gang(GangScheduler::kSchedulerPlugins));
  EXPECT_THAT(Created(cluster.Reconcile(At(0)), "PodGroup"), IsEmpty());
}

TEST(GangTest, ThePodGroupIsDeletedWhenTheJobFinishes) {
  Cluster cluster(JobObject(kScheduling), Gang(GangScheduler::kSchedulerPlugins));
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(1));
  cluster.Exit("fmnist-worker-0", 0);
  const Plan plan = cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_THAT(Deleted(plan, "PodGroup"), ElementsAre("fmnist"));
  EXPECT_FALSE(cluster.pod_group().has_value());
  EXPECT_FALSE(cluster.Reconcile(At(3)).HasActions());
}

TEST(GangTest, ParseGangSchedulerNames) {
  EXPECT_EQ(ParseGangScheduler("none"), GangScheduler::kNone);
  EXPECT_EQ(ParseGangScheduler("scheduler-plugins"), GangScheduler::kSchedulerPlugins);
  EXPECT_EQ(ParseGangScheduler("volcano"), GangScheduler::kVolcano);
  EXPECT_THROW(ParseGangScheduler("kube-batch"), Error);
}

}  // namespace
}  // namespace autodist::reconcile
