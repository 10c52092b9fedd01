// Pods that wait for a node: past the scheduling timeout the job says so (Running False,
// Unschedulable) with the scheduler's own reason, or naming the scheduler that never acted on
// the pod; before it, the job is requeued for the moment it runs out; bound pods clear it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/conditions.h"
#include "reconcile_test_support.h"

namespace autodist::reconcile {
namespace {

using testing::At;
using testing::Cluster;
using ::testing::ElementsAre;
using testing::EventReasons;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::JobObject;

TEST(SchedulingTest, APodTheSchedulerCannotPlaceIsReportedAfterTheTimeout) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));  // the pods are created, Pending
  const Plan early = cluster.Reconcile(At(10));
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonPodsPending);
  // Looked at again when the oldest pod's wait runs out (5 min after its creation).
  ASSERT_TRUE(early.requeue_after.has_value());
  EXPECT_EQ(early.requeue_after->count(), 290);

  // The scheduler tried and said why not.
  cluster.pods().at("fmnist-ps-0")["status"]["conditions"] = {
      {{"type", "PodScheduled"},
       {"status", "False"},
       {"reason", "Unschedulable"},
       {"message", "0/3 nodes are available: 3 Insufficient memory."}}};
  cluster.SetPhase("fmnist-worker-0", "Running");
  cluster.SetPhase("fmnist-worker-1", "Running");
  const Plan late = cluster.Reconcile(At(301));
  EXPECT_EQ(cluster.ConditionStatus(kRunning), "False");
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonUnschedulable);
  EXPECT_EQ(cluster.ConditionOf(kRunning)["message"],
            "pod fmnist-ps-0 was not scheduled within 300 s (the operator's "
            "--scheduling-timeout): 0/3 nodes are available: 3 Insufficient memory.");
  EXPECT_THAT(EventReasons(late), ElementsAre(kReasonUnschedulable));
  EXPECT_EQ(late.events[0].type, kEventWarning);
  // Said once: later reconciles of the same wait change nothing.
  const Plan again = cluster.Reconcile(At(400));
  EXPECT_FALSE(again.status.has_value());
  EXPECT_THAT(again.events, IsEmpty());

  // A node is found: the job runs.
  cluster.SetPhase("fmnist-ps-0", "Running");
  cluster.Reconcile(At(401));
  EXPECT_EQ(cluster.status()["state"], "Running");
}

TEST(SchedulingTest, ASchedulerThatNeverActsIsNamed) {
  Cluster cluster(JobObject({{"template", {{"spec", {{"schedulerName", "no-such-scheduler"}}}}}}));
  cluster.Reconcile(At(0));
  for (auto& [name, pod] : cluster.pods()) {
    ASSERT_EQ(pod["spec"].value("schedulerName", ""), "no-such-scheduler") << name;
  }
  cluster.options().scheduling_timeout = std::chrono::seconds(60);
  cluster.Reconcile(At(61));
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonUnschedulable);
  EXPECT_THAT(std::string(cluster.ConditionOf(kRunning)["message"]),
              HasSubstr("was not scheduled within 60 s (the operator's --scheduling-timeout), "
                        "and its scheduler 'no-such-scheduler' never acted on it"));
  EXPECT_FALSE(cluster.ConditionOf(kFailed).contains("status"));  // waiting, not failed
}

}  // namespace
}  // namespace autodist::reconcile
