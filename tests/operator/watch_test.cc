// Client::Watch over HTTP: the chunked event stream, bookmarks, the server ending the watch,
// 410 for a compacted resourceVersion, and prompt cancellation.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "operator/kube/api_error.h"
#include "operator/kube/client.h"
#include "tests/operator/fake_cluster.h"

namespace autodist::kube {
namespace {

using testing::ConfigMap;
using testing::Eventually;
using testing::FakeCluster;
namespace r = resources;

// A watch running on its own thread, recording what it saw and how it ended.
class BackgroundWatch {
 public:
  BackgroundWatch(Client& client, WatchOptions options) {
    thread_ = std::jthread([this, &client, options](std::stop_token stop) {
      try {
        client.Watch(
            r::kConfigMaps, "default", options,
            [this](const WatchEvent& e) {
              std::lock_guard lock(mutex_);
              events_.push_back(e);
            },
            stop);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        error_ = e.what();
        gone_ = IsGone(e);
      }
      ended_ = true;
    });
  }

  std::vector<WatchEvent> Events() {
    std::lock_guard lock(mutex_);
    return events_;
  }
  size_t Count(EventType type) {
    size_t n = 0;
    for (const auto& e : Events()) n += e.type == type ? 1 : 0;
    return n;
  }
  std::string Error() {
    std::lock_guard lock(mutex_);
    return error_;
  }
  bool ended() const { return ended_.load(); }
  bool gone() const { return gone_.load(); }
  // Requests the stop and returns how long the watch took to end.
  std::chrono::milliseconds Cancel() {
    const auto start = std::chrono::steady_clock::now();
    thread_.request_stop();
    thread_.join();
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  }

 private:
  std::mutex mutex_;
  std::vector<WatchEvent> events_;
  std::string error_;
  std::atomic<bool> ended_{false};
  std::atomic<bool> gone_{false};
  std::jthread thread_;
};

class WatchTest : public ::testing::Test {
 protected:
  FakeCluster cluster_;
  std::unique_ptr<Client> client_ = cluster_.NewClient();
};

TEST_F(WatchTest, StreamsCurrentStateThenChanges) {
  client_->Create(r::kConfigMaps, "default", ConfigMap("existing"));
  WatchOptions options;
  options.allow_bookmarks = false;
  BackgroundWatch watch(*client_, options);
  ASSERT_TRUE(Eventually([&] { return watch.Count(EventType::kAdded) == 1; }));

  auto object = client_->Create(r::kConfigMaps, "default", ConfigMap("new"));
  object["data"]["k"] = "changed";
  client_->Update(r::kConfigMaps, object);
  client_->Delete(r::kConfigMaps, "default", "new");
  ASSERT_TRUE(Eventually([&] { return watch.Events().size() == 4; }));
  const auto events = watch.Events();
  EXPECT_EQ(events[1].type, EventType::kAdded);
  EXPECT_EQ(events[2].type, EventType::kModified);
  EXPECT_EQ(events[2].object["data"]["k"], "changed");
  EXPECT_EQ(events[3].type, EventType::kDeleted);
  EXPECT_EQ(events[3].object["metadata"]["name"], "new");
  EXPECT_LT(watch.Cancel(), std::chrono::milliseconds(500));
  EXPECT_EQ(watch.Error(), "");
}

TEST_F(WatchTest, ResumesAfterAResourceVersionAndReceivesBookmarks) {
  const auto a = client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
  client_->Create(r::kConfigMaps, "default", ConfigMap("b"));
  WatchOptions options;
  options.resource_version = a["metadata"]["resourceVersion"];
  BackgroundWatch watch(*client_, options);
  // Only what happened after `a`; then bookmarks (every 100 ms here) with the current version.
  ASSERT_TRUE(Eventually([&] { return watch.Count(EventType::kBookmark) >= 2; }));
  const auto events = watch.Events();
  EXPECT_EQ(watch.Count(EventType::kAdded), 1u);
  EXPECT_EQ(events[0].object["metadata"]["name"], "b");
  const auto& bookmark = events.back().object;
  EXPECT_EQ(bookmark["kind"], "ConfigMap");
  EXPECT_FALSE(bookmark["metadata"]["resourceVersion"].get<std::string>().empty());
  watch.Cancel();
}

TEST_F(WatchTest, CompactedResourceVersionIsGone) {
  const auto a = client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
  client_->Create(r::kConfigMaps, "default", ConfigMap("b"));
  cluster_.CompactHistory();
  WatchOptions options;
  options.resource_version = a["metadata"]["resourceVersion"];
  BackgroundWatch watch(*client_, options);
  ASSERT_TRUE(Eventually([&] { return watch.ended(); }));
  EXPECT_TRUE(watch.gone()) << watch.Error();
  EXPECT_NE(watch.Error().find("410"), std::string::npos);
}

TEST_F(WatchTest, ServerEndingTheWatchReturnsNormally) {
  BackgroundWatch watch(*client_, WatchOptions{});
  ASSERT_TRUE(Eventually([&] { return cluster_.api().store().open_watches() == 1; }));
  cluster_.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return watch.ended(); }));
  EXPECT_EQ(watch.Error(), "");

  WatchOptions timed;
  timed.timeout_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  BackgroundWatch short_watch(*client_, timed);
  ASSERT_TRUE(Eventually([&] { return short_watch.ended(); }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));
  EXPECT_EQ(short_watch.Error(), "");
}

TEST_F(WatchTest, RejectedWatchThrowsTheStatus) {
  cluster_.InjectFailures({{{"verb", "watch"}, {"resource", "configmaps"}, {"code", 503}}});
  BackgroundWatch watch(*client_, WatchOptions{});
  ASSERT_TRUE(Eventually([&] { return watch.ended(); }));
  EXPECT_NE(watch.Error().find("503"), std::string::npos) << watch.Error();
}

TEST_F(WatchTest, CancellationIsPromptOnAnIdleStream) {
  WatchOptions options;
  options.allow_bookmarks = false;
  BackgroundWatch watch(*client_, options);
  ASSERT_TRUE(Eventually([&] { return cluster_.api().store().open_watches() == 1; }));
  EXPECT_LT(watch.Cancel(), std::chrono::milliseconds(500));
  EXPECT_EQ(watch.Error(), "");
}

}  // namespace
}  // namespace autodist::kube
