// Events as client-go's recorder writes them: a repeat raises the count and moves lastTimestamp
// of the Event already written (one object, not one per reconcile); another message, type or job
// is a new Event; a repeat of an Event that expired meanwhile is created again; the memory of
// written Events is bounded.
#include "operator/app/event_recorder.h"

#include <gtest/gtest.h>

#include <chrono>

#include "operator/kube/resource.h"
#include "tests/operator/fake_cluster.h"

namespace autodist::app {
namespace {

using kube::testing::FakeCluster;

nlohmann::json JobOf(const std::string& name, const std::string& uid) {
  return {{"apiVersion", "autodist.io/v1alpha1"},
          {"kind", "AutoDistJob"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", uid}}}};
}

class EventRecorderTest : public ::testing::Test {
 protected:
  std::vector<nlohmann::json> Events() {
    return client_->ListAll(kube::resources::kEvents, "default")
        .at("items")
        .get<std::vector<nlohmann::json>>();
  }

  FakeCluster cluster_;
  std::unique_ptr<kube::Client> client_ = cluster_.NewClient();
  std::chrono::system_clock::time_point now_ =
      std::chrono::sys_days{std::chrono::year{2026} / 11 / 26} + std::chrono::hours(10);
  EventRecorder recorder_{*client_, 4096, [this] { return now_; }};
};

TEST_F(EventRecorderTest, ARepeatRaisesTheCountOfTheEventAlreadyWritten) {
  const nlohmann::json job = JobOf("fmnist", "uid-1");
  const reconcile::Event refused{reconcile::kEventWarning, "FailedCreate", "quota used up"};
  recorder_.Record(job, refused);
  now_ += std::chrono::seconds(30);
  recorder_.Record(job, refused);
  now_ += std::chrono::seconds(90);
  recorder_.Record(job, refused);

  const std::vector<nlohmann::json> events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 3);
  EXPECT_EQ(events[0]["firstTimestamp"], "2026-11-26T10:00:00Z");
  EXPECT_EQ(events[0]["lastTimestamp"], "2026-11-26T10:02:00Z");
  EXPECT_EQ(events[0]["message"], "quota used up");
  EXPECT_EQ(events[0]["involvedObject"]["uid"], "uid-1");
  // Written as a create, then merge patches of the same object.
  const nlohmann::json requests = cluster_.Requests();
  EXPECT_EQ(requests["create"]["events"], 1);
  EXPECT_EQ(requests["patch"]["events"], 2);
}

TEST_F(EventRecorderTest, AnotherMessageTypeOrJobIsAnotherEvent) {
  const reconcile::Event first{reconcile::kEventWarning, "FailedCreate", "quota used up"};
  recorder_.Record(JobOf("fmnist", "uid-1"), first);
  recorder_.Record(JobOf("fmnist", "uid-1"), {reconcile::kEventWarning, "FailedCreate", "other"});
  recorder_.Record(JobOf("fmnist", "uid-1"),
                   {reconcile::kEventNormal, "FailedCreate", "quota used up"});
  // A job of the same name created again is another object.
  recorder_.Record(JobOf("fmnist", "uid-2"), first);
  const std::vector<nlohmann::json> events = Events();
  ASSERT_EQ(events.size(), 4u);
  for (const nlohmann::json& event : events) EXPECT_EQ(event["count"], 1) << event.dump(2);
}

TEST_F(EventRecorderTest, ARepeatOfAnExpiredEventIsWrittenAnew) {
  const nlohmann::json job = JobOf("fmnist", "uid-1");
  const reconcile::Event restart{reconcile::kEventWarning, "GangRestart", "restart 1"};
  recorder_.Record(job, restart);
  const std::string name = Events().at(0)["metadata"]["name"];
  client_->Delete(kube::resources::kEvents, "default", name);  // the server's TTL ran out
  recorder_.Record(job, restart);
  const std::vector<nlohmann::json> events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0]["metadata"]["name"], name);
  EXPECT_EQ(events[0]["count"], 1);
}

TEST_F(EventRecorderTest, TheMemoryOfWrittenEventsIsBounded) {
  EventRecorder small(*client_, 2, [this] { return now_; });
  const nlohmann::json job = JobOf("fmnist", "uid-1");
  for (const char* message : {"a", "b", "c"}) {
    small.Record(job, {reconcile::kEventNormal, "R", message});
  }
  EXPECT_EQ(small.remembered(), 2u);
  small.Record(job, {reconcile::kEventNormal, "R", "a"});  // forgotten: written anew
  small.Record(job, {reconcile::kEventNormal, "R", "c"});  // remembered: counted
  int total = 0;
  for (const nlohmann::json& event : Events()) total += event["count"].get<int>();
  EXPECT_EQ(Events().size(), 4u);
  EXPECT_EQ(total, 5);
}

TEST_F(EventRecorderTest, AFailedWriteIsLoggedNotThrown) {
  cluster_.InjectFailures({{{"verb", "create"}, {"resource", "events"}, {"code", 500}}});
  EXPECT_NO_THROW(recorder_.Record(JobOf("fmnist", "uid-1"),
                                   {reconcile::kEventNormal, "JobCreated", "created"}));
  EXPECT_TRUE(Events().empty());
  EXPECT_EQ(recorder_.remembered(), 0u);
}

}  // namespace
}  // namespace autodist::app
