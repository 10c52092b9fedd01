// Conditions follow metav1.Condition (lastTransitionTime only on a flip, observedGeneration),
// the state word, the status's JSON form, and the time format.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/job_status.h"
#include "operator/reconcile/progress.h"
#include "operator/reconcile/status_recorder.h"
#include "operator/reconcile/time_format.h"

namespace autodist::reconcile {
namespace {

using ::testing::ElementsAre;

TEST(StatusTest, LastTransitionTimeChangesOnlyWhenTheStatusFlips) {
  JobStatus status;
  std::vector<Event> events;
  StatusRecorder first(status, "2025-01-01T10:00:00Z", 1, events);
  first.Pending("0 of 3 pods are running");
  StatusRecorder later(status, "2025-01-01T10:00:05Z", 2, events);
  later.Pending("2 of 3 pods are running");
  ASSERT_EQ(status.conditions.size(), 1U);
  EXPECT_EQ(status.conditions[0].last_transition_time, "2025-01-01T10:00:00Z");
  EXPECT_EQ(status.conditions[0].message, "2 of 3 pods are running");
  EXPECT_EQ(status.conditions[0].observed_generation, 2);
  EXPECT_TRUE(events.empty());  // pending is not announced
  later.Running("all 3 pods are running");
  EXPECT_EQ(status.conditions[0].last_transition_time, "2025-01-01T10:00:05Z");
  EXPECT_EQ(status.conditions[0].status, "True");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0], (Event{kEventNormal, kReasonAllPodsRunning, "all 3 pods are running"}));
}

TEST(StatusTest, EveryTransitionIsAnnounced) {
  JobStatus status;
  std::vector<Event> events;
  StatusRecorder record(status, "2025-01-01T10:00:00Z", 1, events);
  record.Created("c");
  record.Compiled("s");
  record.Running("r");
  record.Restarting("restart 1");
  record.Restarting("restart 2");  // a second restart is announced again
  record.Running("r");
  record.Suspended("s");
  record.Resumed("r");
  record.Failed(kReasonDeadlineExceeded, "d");
  std::vector<std::string> reasons;
  for (const Event& event : events) reasons.push_back(event.reason);
  EXPECT_THAT(reasons,
              ElementsAre(kReasonJobCreated, kReasonStrategyCompiled, kReasonAllPodsRunning,
                          kReasonGangRestart, kReasonGangRestart, kReasonAllPodsRunning,
                          kReasonJobSuspended, kReasonJobResumed, kReasonDeadlineExceeded));
  EXPECT_EQ(events.back().type, kEventWarning);
  // Announcing twice the same thing announces it once.
  events.clear();
  record.Failed(kReasonDeadlineExceeded, "d");
  record.Created("c");
  EXPECT_TRUE(events.empty());
}

TEST(StatusTest, StateIsTheFirstTrueConditionByPrecedence) {
  JobStatus status;
  std::vector<Event> events;
  StatusRecorder record(status, "2025-01-01T10:00:00Z", 1, events);
  EXPECT_EQ(DeriveState(status), "");
  record.Created("c");
  EXPECT_EQ(DeriveState(status), "Created");
  record.Compiled("c");
  EXPECT_EQ(DeriveState(status), "Compiled");
  record.Running("r");
  EXPECT_EQ(DeriveState(status), "Running");
  record.Restarting("x");
  EXPECT_EQ(DeriveState(status), "Restarting");
  record.Succeeded("done");
  EXPECT_EQ(DeriveState(status), "Succeeded");
  EXPECT_FALSE(status.IsTrue(kRunning));
  EXPECT_FALSE(status.IsTrue(kRestarting));
  EXPECT_TRUE(status.Finished());
}

TEST(StatusTest, JsonRoundTrip) {
  const nlohmann::json json = nlohmann::json::parse(R"({
    "observedGeneration": 2, "state": "Running",
    "conditions": [{"type": "Running", "status": "True", "reason": "AllPodsRunning",
                    "message": "m", "lastTransitionTime": "2025-01-01T10:00:00Z",
                    "observedGeneration": 2}],
    "replicaStatuses": {"PS": {"active": 1, "failed": 0, "succeeded": 0},
                        "Worker": {"active": 2, "failed": 0, "succeeded": 0}},
    "strategy": {"builder": "PS"}, "progress": {"step": 3},
    "restartCount": 1, "resumedFromStep": 400,
    "startTime": "2025-01-01T10:00:00Z", "completionTime": "2025-01-01T11:00:00Z"})");
  EXPECT_EQ(JobStatus::FromJson(json).ToJson(), json);
  // Malformed or missing parts read as defaults.
  const JobStatus lenient = JobStatus::FromJson(nlohmann::json::parse(
      R"({"conditions": [7, {"status": "True"}], "restartCount": "x", "strategy": 3})"));
  EXPECT_TRUE(lenient.conditions.empty());
  EXPECT_EQ(lenient.restart_count, 0);
  EXPECT_TRUE(lenient.strategy.is_null());
  EXPECT_EQ(JobStatus::FromJson(nullptr).ToJson(),
            nlohmann::json::parse(R"({"conditions": [], "restartCount": 0})"));
}

TEST(StatusTest, LongMessagesAreBounded) {
  JobStatus status;
  std::vector<Event> events;
  StatusRecorder record(status, "2025-01-01T10:00:00Z", 1, events);
  record.Failed(kReasonInvalidSpec, std::string(40000, 'x'));
  EXPECT_EQ(status.conditions[0].message.size(), 32768U);
  EXPECT_EQ(events[0].message.size(), 32768U);
}

TEST(StatusTest, ProgressKeepsItsTimeWhileNothingMoves) {
  const Progress progress{5, std::nullopt, std::nullopt, 0.5, std::nullopt, std::nullopt};
  const nlohmann::json first = ProgressStatus(progress, nullptr, "t1");
  EXPECT_EQ(first, (nlohmann::json{{"step", 5}, {"loss", 0.5}, {"lastUpdateTime", "t1"}}));
  EXPECT_EQ(ProgressStatus(progress, first, "t2"), first);
  Progress diverged = progress;
  diverged.loss = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(ProgressStatus(diverged, first, "t3"),
            (nlohmann::json{{"step", 5}, {"lastUpdateTime", "t3"}}));
}

TEST(TimeFormatTest, FormatsAndParsesRfc3339) {
  const TimePoint t = *ParseRfc3339("2025-01-01T10:00:00Z");
  EXPECT_EQ(FormatRfc3339(t), "2025-01-01T10:00:00Z");
  EXPECT_EQ(FormatRfc3339(t + std::chrono::milliseconds(1500)), "2025-01-01T10:00:01Z");
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count(),
            1735725600);
  EXPECT_EQ(*ParseRfc3339("2025-01-01T11:00:30.5+01:00"), t + std::chrono::seconds(30));
  EXPECT_EQ(*ParseRfc3339("2024-02-29T00:00:00-00:30"), *ParseRfc3339("2024-02-29T00:30:00Z"));
  for (const char* bad :
       {"", "2025-01-01", "2025-01-01T10:00:00", "2025-13-01T10:00:00Z", "2025-01-01T10:00:00Zx",
        "2025-01-01 10:00:00Z", "2025-01-01T10:00:00.Z"}) {
    EXPECT_FALSE(ParseRfc3339(bad).has_value()) << bad;
  }
  EXPECT_EQ(SecondsUntil(t, t + std::chrono::milliseconds(1200)), std::chrono::seconds(2));
  EXPECT_EQ(SecondsUntil(t, t - std::chrono::seconds(5)), std::chrono::seconds(1));
}

}  // namespace
}  // namespace autodist::reconcile
