// WorkQueue semantics: de-duplication, re-processing of keys re-added while in process, per-key
// back-off, delayed adds and shutdown.
#include "operator/controller/work_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace autodist::controller {
namespace {

using std::chrono::milliseconds;

TEST(WorkQueueTest, KeysAddedTwiceWhileWaitingAreProcessedOnce) {
  WorkQueue queue;
  queue.Add("a");
  queue.Add("b");
  queue.Add("a");
  EXPECT_EQ(queue.Len(), 2u);
  EXPECT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Get(), "b");
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueueTest, KeyReAddedWhileProcessingIsHandedOutAgainAfterDone) {
  WorkQueue queue;
  queue.Add("a");
  ASSERT_EQ(queue.Get(), "a");
  queue.Add("a");  // changed again while a worker has it
  queue.Add("a");
  EXPECT_EQ(queue.Len(), 0u);  // not handed to a second worker meanwhile
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_EQ(queue.Get(), "a");
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueueTest, RateLimitedAddsBackOffExponentiallyUntilForget) {
  WorkQueue queue(BackoffPolicy{milliseconds(20), milliseconds(1000)});
  const auto timed_get = [&queue] {
    const auto start = std::chrono::steady_clock::now();
    auto key = queue.Get();
    queue.Done(*key);
    return std::chrono::steady_clock::now() - start;
  };
  queue.AddRateLimited("a");
  EXPECT_GE(timed_get(), milliseconds(20));
  queue.AddRateLimited("a");
  EXPECT_GE(timed_get(), milliseconds(40));
  queue.AddRateLimited("a");
  EXPECT_GE(timed_get(), milliseconds(80));
  EXPECT_EQ(queue.NumRequeues("a"), 3);
  queue.Forget("a");
  EXPECT_EQ(queue.NumRequeues("a"), 0);
  queue.AddRateLimited("a");
  EXPECT_LT(timed_get(), milliseconds(80));
}

TEST(WorkQueueTest, AddAfterKeepsTheEarlierTimeAndDedupesWithAdd) {
  WorkQueue queue;
  queue.AddAfter("a", std::chrono::seconds(60));
  queue.AddAfter("a", milliseconds(10));
  EXPECT_EQ(queue.Delayed(), 1u);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(queue.Get(), "a");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  queue.Done("a");

  // Ready now and later: processed now, then once more when the delay passes.
  queue.AddAfter("b", milliseconds(30));
  queue.Add("b");
  EXPECT_EQ(queue.Get(), "b");
  queue.Done("b");
  EXPECT_EQ(queue.Get(), "b");
  queue.Done("b");
  EXPECT_EQ(queue.Delayed(), 0u);
}

TEST(WorkQueueTest, ShutDownWakesWaitingWorkersAndIgnoresLaterAdds) {
  WorkQueue queue;
  std::vector<std::thread> workers;
  std::atomic<int> woke{0};
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&] {
      if (!queue.Get().has_value()) ++woke;
    });
  }
  queue.AddAfter("later", std::chrono::seconds(60));
  std::this_thread::sleep_for(milliseconds(20));
  queue.ShutDown();
  for (auto& w : workers) w.join();
  EXPECT_EQ(woke, 3);
  EXPECT_TRUE(queue.shutting_down());
  queue.Add("x");
  EXPECT_EQ(queue.Len(), 0u);
  EXPECT_FALSE(queue.Get().has_value());
}

TEST(BackoffTest, DoublesUpToTheCapWithBoundedJitter) {
  const BackoffPolicy policy{milliseconds(5), milliseconds(100), 2.0, 0.0};
  EXPECT_EQ(policy.Delay(0), milliseconds(5));
  EXPECT_EQ(policy.Delay(3), milliseconds(40));
  EXPECT_EQ(policy.Delay(10), milliseconds(100));
  EXPECT_EQ(policy.Delay(5000), milliseconds(100));  // no overflow
  const BackoffPolicy jittered{milliseconds(100), milliseconds(1000), 2.0, 0.5};
  for (int i = 0; i < 20; ++i) {
    EXPECT_GE(jittered.Delay(0), milliseconds(100));
    EXPECT_LE(jittered.Delay(0), milliseconds(150));
  }
}

}  // namespace
}  // namespace autodist::controller
