// The operator's own status writes: their events are skipped, everyone else's are not (also
// when they come while a write is in flight), and a reconcile that would read the version a
// write replaced waits for the write's event instead.
#include "operator/app/own_status_writes.h"

#include <gtest/gtest.h>

#include <vector>

namespace autodist::app {
namespace {

nlohmann::json Job(const std::string& rv) {
  return {{"metadata", {{"name", "job"}, {"namespace", "ml"}, {"resourceVersion", rv}}}};
}

class OwnStatusWritesTest : public ::testing::Test {
 protected:
  std::vector<std::string> queued_;
  OwnStatusWrites writes_{[this](const std::string& key) { queued_.push_back(key); }};
  controller::ObjectCache cache_;
};

TEST_F(OwnStatusWritesTest, SkipsTheEventOfTheOperatorsOwnWriteOnly) {
  cache_.Upsert(Job("10"));
  ASSERT_FALSE(writes_.Read("ml/job", cache_).behind_own_write);
  OwnStatusWrites::Write(writes_, "ml/job", "10").Done("11");
  cache_.Upsert(Job("11"));
  EXPECT_FALSE(writes_.ShouldEnqueue("ml/job", Job("11")));
  EXPECT_EQ(writes_.pending(), 0u);
  // Someone else's change afterwards (a spec edit, a status edit) is reconciled.
  cache_.Upsert(Job("12"));
  EXPECT_TRUE(writes_.ShouldEnqueue("ml/job", Job("12")));
  // So is a job never written.
  EXPECT_TRUE(writes_.ShouldEnqueue("ml/other", Job("5")));
  EXPECT_TRUE(queued_.empty());
}

TEST_F(OwnStatusWritesTest, AWriteThatChangedNothingLeavesNothingToWaitFor) {
  // The API server stores an identical object without a new version and sends no event.
  cache_.Upsert(Job("10"));
  OwnStatusWrites::Write(writes_, "ml/job", "10").Done("10");
  EXPECT_EQ(writes_.pending(), 0u);
  EXPECT_FALSE(writes_.Read("ml/job", cache_).behind_own_write);
}

TEST_F(OwnStatusWritesTest, EventsWhileTheWriteIsInFlightAreHeldThenSorted) {
  {
    // The write's own event comes before its response: held, then recognised and dropped.
    OwnStatusWrites::Write write(writes_, "ml/job", "10");
    EXPECT_FALSE(writes_.ShouldEnqueue("ml/job", Job("11")));
    write.Done("11");
  }
  EXPECT_TRUE(queued_.empty());
  EXPECT_EQ(writes_.pending(), 0u);
  {
    // Someone else's change held with it is queued once the write is done.
    OwnStatusWrites::Write write(writes_, "ml/job", "11");
    EXPECT_FALSE(writes_.ShouldEnqueue("ml/job", Job("12")));
    EXPECT_FALSE(writes_.ShouldEnqueue("ml/job", Job("13")));
    write.Done("13");
  }
  EXPECT_EQ(queued_, std::vector<std::string>{"ml/job"});
  queued_.clear();
  {
    // A write that failed (a conflict, an exception): every held event is queued.
    OwnStatusWrites::Write write(writes_, "ml/job", "13");
    EXPECT_FALSE(writes_.ShouldEnqueue("ml/job", Job("14")));
  }
  EXPECT_EQ(queued_, std::vector<std::string>{"ml/job"});
  EXPECT_EQ(writes_.pending(), 0u);
}

TEST_F(OwnStatusWritesTest, AReconcileBehindTheWriteWaitsForItsEvent) {
  cache_.Upsert(Job("10"));
  OwnStatusWrites::Write(writes_, "ml/job", "10").Done("11");
  // A child's event runs a reconcile before the job's informer has seen the write.
  const OwnStatusWrites::CachedJob cached = writes_.Read("ml/job", cache_);
  ASSERT_NE(cached.job, nullptr);
  EXPECT_TRUE(cached.behind_own_write);
  // Then the write's event must queue the job: the skipped reconcile happens now.
  cache_.Upsert(Job("11"));
  EXPECT_TRUE(writes_.ShouldEnqueue("ml/job", Job("11")));
  EXPECT_FALSE(writes_.Read("ml/job", cache_).behind_own_write);
}

TEST_F(OwnStatusWritesTest, EventsOfOtherVersionsEndTheWait) {
  cache_.Upsert(Job("10"));
  OwnStatusWrites::Write(writes_, "ml/job", "10").Done("11");
  // The handler of the version the write was made on may run after the write: it still
  // queues, and the write stays tracked.
  EXPECT_TRUE(writes_.ShouldEnqueue("ml/job", Job("10")));
  EXPECT_EQ(writes_.pending(), 1u);
  // A relist that skipped the write's version: queued, and no longer waited for.
  cache_.Upsert(Job("14"));
  EXPECT_TRUE(writes_.ShouldEnqueue("ml/job", Job("14")));
  EXPECT_EQ(writes_.pending(), 0u);
  EXPECT_FALSE(writes_.Read("ml/job", cache_).behind_own_write);
  // A deleted job is forgotten, also while a write is in flight.
  OwnStatusWrites::Write(writes_, "ml/job", "14").Done("15");
  writes_.Forget("ml/job");
  {
    OwnStatusWrites::Write write(writes_, "ml/job", "15");
    writes_.Forget("ml/job");
    write.Done("16");
  }
  EXPECT_EQ(writes_.pending(), 0u);
  EXPECT_EQ(writes_.Read("ml/gone", cache_).job, nullptr);
}

}  // namespace
}  // namespace autodist::app
