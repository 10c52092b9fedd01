// Watches: resourceVersion semantics, selectors, bookmarks, 410 after compaction, timeouts and
// Table-formatted events.
#include <gtest/gtest.h>

#include <thread>

#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::Call;
using testing::MemorySink;
using testing::StartWatch;

const char* const kConfigMaps = "/api/v1/namespaces/default/configmaps";

nlohmann::json ConfigMap(const std::string& name, const std::string& role = "worker") {
  return {{"metadata", {{"name", name}, {"labels", {{"role", role}}}}}, {"data", {{"k", "v"}}}};
}

std::string Rv(const testing::Reply& r) { return r.body["metadata"]["resourceVersion"]; }

std::vector<std::string> Types(const std::vector<nlohmann::json>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e["type"]);
  return out;
}

using V = std::vector<std::string>;

TEST(Watch, FromNowSendsCurrentObjectsThenChanges) {
  ApiServer api;
  Call(api, "POST", kConfigMaps, ConfigMap("a"));
  auto sink = std::make_shared<MemorySink>();
  auto watcher = StartWatch(api, std::string(kConfigMaps) + "?watch=true", sink);
  Call(api, "PATCH", std::string(kConfigMaps) + "/a", {{"data", {{"k", "2"}}}},
       "application/merge-patch+json");
  Call(api, "DELETE", std::string(kConfigMaps) + "/a");
  const auto events = sink->WaitForEvents(3);
  EXPECT_EQ(Types(events), (V{"ADDED", "MODIFIED", "DELETED"}));
  EXPECT_EQ(events[1]["object"]["data"]["k"], "2");
  // The DELETED object carries the resourceVersion of the deletion.
  EXPECT_GT(std::stoull(events[2]["object"]["metadata"]["resourceVersion"].get<std::string>()),
            std::stoull(events[1]["object"]["metadata"]["resourceVersion"].get<std::string>()));
  watcher->Stop();
  EXPECT_TRUE(sink->WaitClosed());
}

TEST(Watch, FromAResourceVersionReplaysLaterEventsOnly) {
  ApiServer api;
  const auto a = Call(api, "POST", kConfigMaps, ConfigMap("a"));
  Call(api, "POST", kConfigMaps, ConfigMap("b"));
  Call(api, "POST", kConfigMaps, ConfigMap("c"));
  auto sink = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=1&resourceVersion=" + Rv(a), sink);
  const auto events = sink->WaitForEvents(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "b");
  EXPECT_EQ(events[1]["object"]["metadata"]["name"], "c");
}

TEST(Watch, ListThenWatchFromTheListResourceVersionMissesNothing) {
  ApiServer api;
  Call(api, "POST", kConfigMaps, ConfigMap("a"));
  const auto list = Call(api, "GET", kConfigMaps);
  Call(api, "POST", kConfigMaps, ConfigMap("b"));  // between list and watch
  auto sink = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true&resourceVersion=" + Rv(list), sink);
  const auto events = sink->WaitForEvents(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "b");
}

TEST(Watch, SelectorsTurnTransitionsIntoAddedAndDeleted) {
  ApiServer api;
  auto sink = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true&labelSelector=role%3Dworker", sink);
  Call(api, "POST", kConfigMaps, ConfigMap("a", "ps"));  // not selected
  Call(api, "PATCH", std::string(kConfigMaps) + "/a",
       {{"metadata", {{"labels", {{"role", "worker"}}}}}},
       "application/merge-patch+json");  // enters: ADDED
  Call(api, "PATCH", std::string(kConfigMaps) + "/a", {{"data", {{"x", "1"}}}},
       "application/merge-patch+json");  // MODIFIED
  Call(api, "PATCH", std::string(kConfigMaps) + "/a",
       {{"metadata", {{"labels", {{"role", "ps"}}}}}},
       "application/merge-patch+json");  // leaves: DELETED
  EXPECT_EQ(Types(sink->WaitForEvents(3)), (V{"ADDED", "MODIFIED", "DELETED"}));

  auto by_name = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true&fieldSelector=metadata.name%3Db",
             by_name);
  Call(api, "POST", kConfigMaps, ConfigMap("c"));
  Call(api, "POST", kConfigMaps, ConfigMap("b"));
  const auto events = by_name->WaitForEvents(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "b");

  auto other_ns = std::make_shared<MemorySink>();
  StartWatch(api, "/api/v1/watch/namespaces/kube-system/configmaps", other_ns);
  Call(api, "POST", kConfigMaps, ConfigMap("d"));
  EXPECT_TRUE(other_ns->WaitForEvents(1, std::chrono::milliseconds(100)).empty());
}

TEST(Watch, CompactedHistoryIsGone) {
  ApiServer api;
  const auto a = Call(api, "POST", kConfigMaps, ConfigMap("a"));
  Call(api, "POST", kConfigMaps, ConfigMap("b"));
  api.store().CompactHistory();
  auto sink = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true&resourceVersion=" + Rv(a), sink);
  const auto events = sink->WaitForEvents(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "ERROR");
  EXPECT_EQ(events[0]["object"]["kind"], "Status");
  EXPECT_EQ(events[0]["object"]["code"], 410);
  EXPECT_EQ(events[0]["object"]["reason"], "Expired");
  EXPECT_NE(events[0]["object"]["message"].get<std::string>().find("too old resource version"),
            std::string::npos);
  EXPECT_TRUE(sink->WaitClosed());

  // A list continue token from before the compaction is 410 too.
  Call(api, "POST", kConfigMaps, ConfigMap("c"));
  const auto page = Call(api, "GET", std::string(kConfigMaps) + "?limit=1");
  Call(api, "POST", kConfigMaps, ConfigMap("e"));  // the snapshot the token names is now history
  api.store().CompactHistory();
  const auto expired = Call(api, "GET",
                            std::string(kConfigMaps) + "?limit=1&continue=" +
                                page.body["metadata"]["continue"].get<std::string>());
  EXPECT_EQ(expired.status, 410);
}

TEST(Watch, BoundedHistoryExpiresOldResourceVersions) {
  ApiServerOptions options;
  options.store.history_size = 2;
  ApiServer api(options);
  const auto a = Call(api, "POST", kConfigMaps, ConfigMap("a"));
  const auto b = Call(api, "POST", kConfigMaps, ConfigMap("b"));
  Call(api, "POST", kConfigMaps, ConfigMap("c"));
  Call(api, "POST", kConfigMaps, ConfigMap("d"));
  auto old = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true&resourceVersion=" + Rv(a), old);
  EXPECT_EQ(old->WaitForEvents(1)[0]["type"], "ERROR");
  auto recent = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true&resourceVersion=" + Rv(b), recent);
  EXPECT_EQ(Types(recent->WaitForEvents(2)), (V{"ADDED", "ADDED"}));
}

TEST(Watch, BookmarksPeriodicallyAndForInitialEvents) {
  ApiServerOptions options;
  options.bookmark_interval = std::chrono::milliseconds(100);
  ApiServer api(options);
  Call(api, "POST", kConfigMaps, ConfigMap("a"));
  auto sink = std::make_shared<MemorySink>();
  StartWatch(api,
             std::string(kConfigMaps) +
                 "?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&"
                 "resourceVersionMatch=NotOlderThan",
             sink);
  const auto events = sink->WaitForEvents(3);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[1]["type"], "BOOKMARK");
  EXPECT_EQ(events[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  EXPECT_EQ(events[1]["object"]["kind"], "ConfigMap");
  EXPECT_EQ(events[2]["type"], "BOOKMARK");  // periodic
  EXPECT_EQ(events[2]["object"]["metadata"]["resourceVersion"],
            std::to_string(api.store().current_rv()));

  auto quiet = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true&resourceVersion=1", quiet);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const auto& e : quiet->Events()) EXPECT_NE(e["type"], "BOOKMARK");
}

TEST(Watch, TimeoutSecondsEndsTheStream) {
  ApiServer api;
  auto sink = std::make_shared<MemorySink>();
  const auto start = std::chrono::steady_clock::now();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true&timeoutSeconds=1", sink);
  EXPECT_TRUE(sink->WaitClosed(std::chrono::seconds(3)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));
}

TEST(Watch, CloseAllWatchesEndsEveryStream) {
  ApiServer api;
  auto a = std::make_shared<MemorySink>();
  auto b = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true", a);
  StartWatch(api, "/api/v1/pods?watch=true", b);
  EXPECT_EQ(api.store().open_watches(), 2u);
  Call(api, "POST", "/_testdouble/faults", {{"closeWatches", true}});
  EXPECT_TRUE(a->WaitClosed());
  EXPECT_TRUE(b->WaitClosed());
  EXPECT_EQ(api.store().open_watches(), 0u);
}

TEST(Watch, TableEventsCarryColumnsOnTheFirstEventOnly) {
  ApiServer api;
  Call(api, "POST", kConfigMaps, ConfigMap("a"));
  auto sink = std::make_shared<MemorySink>();
  StartWatch(api, std::string(kConfigMaps) + "?watch=true", sink,
             "application/json;as=Table;v=v1;g=meta.k8s.io");
  Call(api, "POST", kConfigMaps, ConfigMap("b"));
  const auto events = sink->WaitForEvents(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["object"]["kind"], "Table");
  EXPECT_FALSE(events[0]["object"]["columnDefinitions"].empty());
  EXPECT_TRUE(events[1]["object"]["columnDefinitions"].empty());
  EXPECT_EQ(events[1]["object"]["rows"][0]["cells"][0], "b");
}

TEST(Watch, ManyWatchersSeeEveryEventInOrder) {
  ApiServer api;
  std::vector<std::shared_ptr<MemorySink>> sinks;
  for (int i = 0; i < 20; ++i) {
    sinks.push_back(std::make_shared<MemorySink>());
    StartWatch(api, std::string(kConfigMaps) + "?watch=true", sinks.back());
  }
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&api, t] {
      for (int i = 0; i < 50; ++i) {
        Call(api, "POST", kConfigMaps,
             ConfigMap("cm-" + std::to_string(t) + "-" + std::to_string(i)));
      }
    });
  }
  for (auto& w : writers) w.join();
  for (const auto& sink : sinks) {
    const auto events = sink->WaitForEvents(200);
    ASSERT_EQ(events.size(), 200u);
    uint64_t last = 0;
    for (const auto& e : events) {
      const uint64_t rv =
          std::stoull(e["object"]["metadata"]["resourceVersion"].get<std::string>());
      EXPECT_GT(rv, last);
      last = rv;
    }
  }
}

}  // namespace
}  // namespace autodist::k8s
