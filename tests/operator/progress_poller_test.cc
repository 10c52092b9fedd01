// Progress polled off the reconcile workers: Latest never waits on the network, a change queues
// the job once (an unchanged read does not), an unreachable coordinator holds back neither the
// others' reads nor any caller, and a forgotten job is read no more.
#include "operator/app/progress_poller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "tests/operator/fake_cluster.h"

namespace autodist::app {
namespace {

using kube::testing::Eventually;
using std::chrono::milliseconds;

// Coordinators by address: "blackhole" answers nothing until the read's timeout runs out.
class FakeCoordinators {
 public:
  std::optional<reconcile::Progress> Read(const std::string& coordinator, milliseconds timeout) {
    {
      const std::lock_guard lock(mutex_);
      ++reads_[coordinator];
    }
    if (coordinator == "blackhole") {
      std::this_thread::sleep_for(timeout);
      return std::nullopt;
    }
    const std::lock_guard lock(mutex_);
    const auto found = steps_.find(coordinator);
    if (found == steps_.end()) return std::nullopt;
    reconcile::Progress progress;
    progress.step = found->second;
    return progress;
  }
  void SetStep(const std::string& coordinator, int64_t step) {
    const std::lock_guard lock(mutex_);
    steps_[coordinator] = step;
  }
  int Reads(const std::string& coordinator) {
    const std::lock_guard lock(mutex_);
    return reads_[coordinator];
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int64_t> steps_;
  std::map<std::string, int> reads_;
};

class ProgressPollerTest : public ::testing::Test {
 protected:
  int Changes(const std::string& key) {
    const std::lock_guard lock(mutex_);
    return changes_[key];
  }

  FakeCoordinators coordinators_;
  std::mutex mutex_;
  std::map<std::string, int> changes_;
  ProgressPoller poller_{[this](const std::string& coordinator, milliseconds timeout) {
                           return coordinators_.Read(coordinator, timeout);
                         },
                         [this](const std::string& key) {
                           const std::lock_guard lock(mutex_);
                           ++changes_[key];
                         },
                         ProgressPollerOptions{milliseconds(20), milliseconds(2000), 2}};
};

TEST_F(ProgressPollerTest, AChangeQueuesTheJobOnceAndLatestHoldsIt) {
  EXPECT_FALSE(poller_.Latest("ml/a").has_value());
  coordinators_.SetStep("a:29500", 10);
  poller_.Track("ml/a", "a:29500");
  ASSERT_TRUE(Eventually([&] { return Changes("ml/a") == 1; }));
  EXPECT_EQ(poller_.Latest("ml/a")->step, 10);
  // Read again and again, unchanged: no more queueing.
  const int reads = coordinators_.Reads("a:29500");
  ASSERT_TRUE(Eventually([&] { return coordinators_.Reads("a:29500") >= reads + 3; }));
  EXPECT_EQ(Changes("ml/a"), 1);
  coordinators_.SetStep("a:29500", 20);
  ASSERT_TRUE(Eventually([&] { return Changes("ml/a") == 2; }));
  EXPECT_EQ(poller_.Latest("ml/a")->step, 20);
}

TEST_F(ProgressPollerTest, AnUnreachableCoordinatorHoldsBackNeitherReadersNorOtherJobs) {
  poller_.Track("ml/stuck", "blackhole");
  ASSERT_TRUE(Eventually([&] { return coordinators_.Reads("blackhole") == 1; }));
  // A blackholed read is in flight for 2 s; meanwhile Latest answers at once...
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(poller_.Latest("ml/stuck").has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(50));
  // ...and another job is read every 20 ms on the other thread, its changes queued.
  coordinators_.SetStep("b:29500", 1);
  poller_.Track("ml/b", "b:29500");
  for (int64_t step = 2; step <= 5; ++step) {
    ASSERT_TRUE(Eventually([&] { return Changes("ml/b") == step - 1; }, milliseconds(500)))
        << "step " << step;
    coordinators_.SetStep("b:29500", step);
  }
  EXPECT_EQ(coordinators_.Reads("blackhole"), 1);  // still the first read
}

TEST_F(ProgressPollerTest, AForgottenJobIsReadNoMoreAndAMovedOneAtItsNewAddress) {
  coordinators_.SetStep("a:29500", 1);
  coordinators_.SetStep("a2:29500", 7);
  poller_.Track("ml/a", "a:29500");
  ASSERT_TRUE(Eventually([&] { return poller_.Latest("ml/a").has_value(); }));
  poller_.Track("ml/a", "a2:29500");  // the job's coordinator moved: its reading starts afresh
  ASSERT_TRUE(Eventually([&] {
    const auto latest = poller_.Latest("ml/a");
    return latest.has_value() && latest->step == 7;
  }));
  poller_.Forget("ml/a");
  EXPECT_EQ(poller_.tracked(), 0u);
  EXPECT_FALSE(poller_.Latest("ml/a").has_value());
  std::this_thread::sleep_for(milliseconds(60));  // a read in flight when forgotten may finish
  const int reads = coordinators_.Reads("a2:29500");
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(coordinators_.Reads("a2:29500"), reads);
}

}  // namespace
}  // namespace autodist::app
