// The informer against the API-server double: initial sync, events into the cache and the
// handlers, bookmarks, relist after 410 Gone, resuming a dropped watch, back-off on injected
// 500/429, a prompt stop, and the transform applied before caching.
#include "operator/controller/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>

#include "operator/kube/api_error.h"
#include "tests/operator/fake_cluster.h"

namespace autodist::controller {
namespace {

using kube::testing::ConfigMap;
using kube::testing::Eventually;
using kube::testing::FakeCluster;
namespace r = kube::resources;

// Records handler calls as "add a", "update a", "delete a".
class Recorder {
 public:
  EventHandler Handler() {
    return {[this](const nlohmann::json& o) { Record("add", o); },
            [this](const nlohmann::json&, const nlohmann::json& o) { Record("update", o); },
            [this](const nlohmann::json& o) { Record("delete", o); }};
  }
  std::vector<std::string> Calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  bool Saw(const std::string& call) {
    const auto calls = Calls();
    return std::find(calls.begin(), calls.end(), call) != calls.end();
  }

 private:
  void Record(const char* what, const nlohmann::json& o) {
    std::lock_guard lock(mutex_);
    calls_.push_back(std::string(what) + " " + o["metadata"]["name"].get<std::string>());
  }
  std::mutex mutex_;
  std::vector<std::string> calls_;
};

InformerOptions Fast() {
  InformerOptions options;
  options.ns = "default";
  options.backoff = BackoffPolicy{std::chrono::milliseconds(10), std::chrono::milliseconds(100)};
  return options;
}

class InformerTest : public ::testing::Test {
 protected:
  // Starts `informer` and waits until it has listed and opened its watch.
  void StartWatching(Informer& informer) {
    informer.Start();
    ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
    ASSERT_TRUE(Eventually([&] { return cluster_.api().store().open_watches() == 1; }));
  }
  // Makes `changes` the informer cannot see: its ConfigMap watch is cut and cannot be reopened,
  // and the history is compacted after them, so its resourceVersion is too old when it comes
  // back: 410, then a relist.
  void ChangeBehindTheWatch(const std::function<void()>& changes) {
    cluster_.InjectFailures({{{"verb", "watch"}, {"resource", "configmaps"}, {"code", 500}}});
    cluster_.CloseWatches();
    changes();
    cluster_.CompactHistory();
  }

  FakeCluster cluster_;
  std::unique_ptr<kube::Client> client_ = cluster_.NewClient();
  Recorder recorder_;
};

TEST_F(InformerTest, SyncsThenFollowsChanges) {
  client_->Create(r::kConfigMaps, "default", ConfigMap("a", {{"app", "x"}}));
  Informer informer(*client_, r::kConfigMaps, Fast());
  informer.AddHandler(recorder_.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  EXPECT_EQ(informer.cache().size(), 1u);
  const auto cached = informer.cache().Get("default", "a");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ((*cached)["kind"], "ConfigMap");  // list items get their kind back
  EXPECT_EQ(recorder_.Calls(), std::vector<std::string>{"add a"});

  auto b = client_->Create(r::kConfigMaps, "default", ConfigMap("b", {{"app", "y"}}));
  b["data"]["k"] = "2";
  client_->Update(r::kConfigMaps, b);
  client_->Delete(r::kConfigMaps, "default", "a");
  ASSERT_TRUE(Eventually([&] { return recorder_.Calls().size() == 4; }));
  EXPECT_EQ(recorder_.Calls(),
            (std::vector<std::string>{"add a", "add b", "update b", "delete a"}));
  EXPECT_EQ(informer.cache().Get("default", "a"), nullptr);
  EXPECT_EQ((*informer.cache().Get("default", "b"))["data"]["k"], "2");
  EXPECT_EQ(informer.cache().List("default", LabelSelector::Parse("app=y")).size(), 1u);
  EXPECT_EQ(informer.lists(), 1);
  EXPECT_EQ(informer.watches(), 1);
}

TEST_F(InformerTest, BookmarksAdvanceTheResourceVersion) {
  Informer informer(*client_, r::kConfigMaps, Fast());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  const std::string synced_at = informer.last_resource_version();
  // A write elsewhere (another resource) moves the global version; only a bookmark tells this
  // informer, which sees no configmap events.
  client_->Create(r::kServices, "default",
                  {{"metadata", {{"name", "svc"}}}, {"spec", {{"clusterIP", "None"}}}});
  EXPECT_TRUE(Eventually([&] { return informer.last_resource_version() != synced_at; }));
  EXPECT_EQ(informer.cache().size(), 0u);
}

TEST_F(InformerTest, RelistsAfterGoneAndReconcilesTheCache) {
  client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
  client_->Create(r::kConfigMaps, "default", ConfigMap("b"));
  Informer informer(*client_, r::kConfigMaps, Fast());
  informer.AddHandler(recorder_.Handler());
  ASSERT_NO_FATAL_FAILURE(StartWatching(informer));

  ChangeBehindTheWatch([&] {
    client_->Delete(r::kConfigMaps, "default", "a");
    auto b = client_->Get(r::kConfigMaps, "default", "b");
    b["data"]["k"] = "changed";
    client_->Update(r::kConfigMaps, b);
    client_->Create(r::kConfigMaps, "default", ConfigMap("c"));
  });

  ASSERT_TRUE(Eventually([&] { return informer.lists() == 2; }));
  ASSERT_TRUE(Eventually([&] { return recorder_.Calls().size() == 5; }));
  const auto calls = recorder_.Calls();
  EXPECT_TRUE(recorder_.Saw("delete a"));
  EXPECT_TRUE(recorder_.Saw("update b"));
  EXPECT_TRUE(recorder_.Saw("add c"));
  EXPECT_EQ(informer.cache().Keys(), (std::vector<std::string>{"default/b", "default/c"}));
  EXPECT_EQ((*informer.cache().Get("default", "b"))["data"]["k"], "changed");

  // And it is watching again from the relist's version.
  client_->Create(r::kConfigMaps, "default", ConfigMap("d"));
  EXPECT_TRUE(Eventually([&] { return recorder_.Saw("add d"); }));
}

TEST_F(InformerTest, ResumesADroppedWatchWithoutRelisting) {
  Informer informer(*client_, r::kConfigMaps, Fast());
  informer.AddHandler(recorder_.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
  ASSERT_TRUE(Eventually([&] { return recorder_.Saw("add a"); }));

  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Eventually([&] { return cluster_.api().store().open_watches() >= 1; }));
    cluster_.CloseWatches();
    // Written while no watch is open: the resumed watch replays it from the history.
    client_->Create(r::kConfigMaps, "default", ConfigMap("gap" + std::to_string(i)));
  }
  EXPECT_TRUE(Eventually([&] { return informer.cache().size() == 4; }));
  EXPECT_EQ(informer.lists(), 1);
  EXPECT_GE(informer.watches(), 2);
  EXPECT_EQ(recorder_.Calls().size(), 4u);  // each object added once
}

TEST_F(InformerTest, RetriesInjectedServerErrorsAndThrottling) {
  // The first list fails twice (500, then 429), the first watch once (500).
  cluster_.InjectFailures(
      {{{"verb", "list"}, {"resource", "configmaps"}, {"code", 500}},
       {{"verb", "list"}, {"resource", "configmaps"}, {"code", 429}, {"retryAfterSeconds", 0}},
       {{"verb", "watch"}, {"resource", "configmaps"}, {"code", 500}}});
  client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
  Informer informer(*client_, r::kConfigMaps, Fast());
  informer.AddHandler(recorder_.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  EXPECT_EQ(informer.lists(), 3);
  EXPECT_EQ(informer.cache().size(), 1u);
  client_->Create(r::kConfigMaps, "default", ConfigMap("b"));
  EXPECT_TRUE(Eventually([&] { return recorder_.Saw("add b"); }));
  EXPECT_GE(informer.watches(), 2);
  EXPECT_EQ(cluster_.api().faults().Stats()["faultsInjected"], 3);
}

TEST_F(InformerTest, StopsPromptlyWhileWatchingOrBackingOff) {
  Informer watching(*client_, r::kConfigMaps, Fast());
  watching.Start();
  ASSERT_TRUE(watching.WaitForSync(std::chrono::seconds(5)));
  auto start = std::chrono::steady_clock::now();
  watching.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));

  // A server that keeps failing: the informer is in a long back-off when stopped.
  cluster_.InjectFailures(
      {{{"verb", "list"}, {"resource", "pods"}, {"code", 500}, {"count", 100}}});
  InformerOptions slow = Fast();
  slow.backoff = BackoffPolicy{std::chrono::seconds(30), std::chrono::seconds(30)};
  Informer failing(*client_, r::kPods, slow);
  failing.Start();
  ASSERT_TRUE(Eventually([&] { return failing.lists() == 1; }));
  EXPECT_FALSE(failing.WaitForSync(std::chrono::milliseconds(50)));
  start = std::chrono::steady_clock::now();
  failing.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_FALSE(failing.HasSynced());
}

// A ConfigMap with `data`.
nlohmann::json WithData(const std::string& name, const nlohmann::json& data,
                        const nlohmann::json& labels = nullptr) {
  nlohmann::json object = ConfigMap(name, labels);
  object["data"] = data;
  return object;
}

// Keeps metadata and data["keep"], as the operator's transforms keep only what it reads.
nlohmann::json KeepOnlyKeep(const nlohmann::json& object) {
  nlohmann::json slim = {{"metadata", object.at("metadata")}};
  if (object.contains("data") && object["data"].contains("keep")) {
    slim["data"]["keep"] = object["data"]["keep"];
  }
  return slim;
}

// What the handlers were given: true when it still had data["drop"].
class ShapeRecorder {
 public:
  EventHandler Handler() {
    return {[this](const nlohmann::json& o) { Record(o); },
            [this](const nlohmann::json& old_object, const nlohmann::json& o) {
              Record(old_object);
              Record(o);
            },
            [this](const nlohmann::json& o) { Record(o); }};
  }
  int seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  int untransformed() {
    std::lock_guard lock(mutex_);
    return untransformed_;
  }

 private:
  void Record(const nlohmann::json& o) {
    std::lock_guard lock(mutex_);
    ++seen_;
    if (o.contains("data") && o["data"].contains("drop")) ++untransformed_;
  }
  std::mutex mutex_;
  int seen_ = 0;
  int untransformed_ = 0;
};

TEST_F(InformerTest, TransformsListedAndWatchedObjectsBeforeCachingThem) {
  client_->Create(r::kConfigMaps, "default",
                  WithData("a", {{"keep", "1"}, {"drop", "big"}}, {{"app", "x"}}));
  InformerOptions options = Fast();
  std::atomic<int> calls{0};
  options.transform = [&calls](const nlohmann::json& object) {
    ++calls;
    return KeepOnlyKeep(object);
  };
  // Declared before the informer, so that it outlives the informer's threads, which may still
  // call it (a resync) until the informer is destroyed.
  ShapeRecorder shapes;
  Informer informer(*client_, r::kConfigMaps, options);
  informer.AddHandler(shapes.Handler());
  informer.AddHandler(recorder_.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  // Listed: cached transformed, still found by its labels (the selector reads the metadata).
  const auto a = informer.cache().Get("default", "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ((*a)["data"], (nlohmann::json{{"keep", "1"}}));
  EXPECT_EQ(informer.cache().List("default", LabelSelector::Parse("app=x")).size(), 1u);

  // Watched: added, modified and deleted objects alike.
  auto b =
      client_->Create(r::kConfigMaps, "default", WithData("b", {{"keep", "2"}, {"drop", "big"}}));
  b["data"]["keep"] = "3";
  client_->Update(r::kConfigMaps, b);
  client_->Delete(r::kConfigMaps, "default", "a");
  ASSERT_TRUE(Eventually([&] { return recorder_.Calls().size() == 4; }));
  EXPECT_EQ(recorder_.Calls(),
            (std::vector<std::string>{"add a", "add b", "update b", "delete a"}));
  EXPECT_EQ((*informer.cache().Get("default", "b"))["data"], (nlohmann::json{{"keep", "3"}}));
  EXPECT_EQ(shapes.seen(), 5);  // the update shows the old and the new object
  EXPECT_EQ(shapes.untransformed(), 0);
  EXPECT_EQ(calls.load(), 4);  // one list item and three watch events
  // The watch position still comes from the events, whatever the transform kept.
  EXPECT_EQ(informer.last_resource_version(),
            client_->List(r::kConfigMaps, "default")["metadata"]["resourceVersion"]);
}

TEST_F(InformerTest, TransformsWhatARelistBrings) {
  client_->Create(r::kConfigMaps, "default", WithData("a", {{"drop", "x"}}));
  InformerOptions options = Fast();
  options.transform = KeepOnlyKeep;
  // Declared before the informer, so that it outlives the informer's threads, which may still
  // call it (a resync) until the informer is destroyed.
  ShapeRecorder shapes;
  Informer informer(*client_, r::kConfigMaps, options);
  informer.AddHandler(shapes.Handler());
  informer.AddHandler(recorder_.Handler());
  ASSERT_NO_FATAL_FAILURE(StartWatching(informer));

  // The informer learns of these through a relist.
  ChangeBehindTheWatch([&] {
    auto a = client_->Get(r::kConfigMaps, "default", "a");
    a["data"]["keep"] = "changed";
    client_->Update(r::kConfigMaps, a);
    client_->Create(r::kConfigMaps, "default", WithData("b", {{"keep", "b"}, {"drop", "y"}}));
  });

  ASSERT_TRUE(Eventually([&] { return informer.lists() == 2; }));
  ASSERT_TRUE(Eventually([&] { return recorder_.Calls().size() == 3; }));
  EXPECT_TRUE(recorder_.Saw("update a"));
  EXPECT_TRUE(recorder_.Saw("add b"));
  EXPECT_EQ((*informer.cache().Get("default", "a"))["data"], (nlohmann::json{{"keep", "changed"}}));
  EXPECT_EQ((*informer.cache().Get("default", "b"))["data"], (nlohmann::json{{"keep", "b"}}));
  EXPECT_EQ(shapes.untransformed(), 0);
}

}  // namespace
}  // namespace autodist::controller
