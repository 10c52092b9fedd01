// The generic client against the API-server double over HTTP: CRUD, conflicts, not-found,
// the status subresource, merge patch, deletes, pagination and how failures surface.
#include "operator/kube/client.h"

#include <gtest/gtest.h>

#include <mutex>

#include "operator/kube/api_error.h"
#include "tests/k8s/test_util.h"
#include "tests/operator/fake_cluster.h"

namespace autodist::kube {
namespace {

using testing::ConfigMap;
using testing::FakeCluster;
namespace r = resources;

const Resource kNamespaces{"", "v1", "namespaces", "Namespace", false};

class ClientTest : public ::testing::Test {
 protected:
  FakeCluster cluster_;
  std::unique_ptr<Client> client_ = cluster_.NewClient();
};

TEST_F(ClientTest, CreateGetListUpdateDelete) {
  const auto created = client_->Create(r::kConfigMaps, "default", ConfigMap("a", {{"app", "x"}}));
  EXPECT_EQ(created["metadata"]["namespace"], "default");
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  client_->Create(r::kConfigMaps, "default", ConfigMap("b", {{"app", "y"}}));
  client_->Create(kNamespaces, "", {{"metadata", {{"name", "other"}}}});
  client_->Create(r::kConfigMaps, "other", ConfigMap("c", {{"app", "x"}}));

  EXPECT_EQ(client_->Get(r::kConfigMaps, "default", "a")["data"]["k"], "v");
  EXPECT_EQ(client_->List(r::kConfigMaps, "default")["items"].size(), 2u);
  EXPECT_EQ(client_->List(r::kConfigMaps, "")["items"].size(), 3u);  // all namespaces
  ListOptions selected;
  selected.label_selector = "app in (x)";
  const auto xs = client_->List(r::kConfigMaps, "", selected)["items"];
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_EQ(xs[0]["metadata"]["name"], "a");

  auto object = client_->Get(r::kConfigMaps, "default", "a");
  object["data"]["k"] = "w";
  const auto updated = client_->Update(r::kConfigMaps, object);
  EXPECT_EQ(updated["data"]["k"], "w");
  EXPECT_NE(updated["metadata"]["resourceVersion"], object["metadata"]["resourceVersion"]);

  client_->Delete(r::kConfigMaps, "default", "a");
  EXPECT_EQ(client_->List(r::kConfigMaps, "default")["items"].size(), 1u);
}

TEST_F(ClientTest, NotFoundConflictAndAlreadyExistsCarryCodeAndReason) {
  try {
    client_->Get(r::kConfigMaps, "default", "missing");
    FAIL() << "found";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.http_code(), 404);
    EXPECT_EQ(e.reason(), "NotFound");
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_TRUE(IsNotFound(e));
    EXPECT_NE(std::string(e.what()).find("GET /api/v1/namespaces/default/configmaps/missing: 404 "
                                         "NotFound: configmaps \"missing\" not found"),
              std::string::npos)
        << e.what();
  }

  client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
  try {
    client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
    FAIL() << "created twice";
  } catch (const Error& e) {
    EXPECT_TRUE(IsAlreadyExists(e));
    EXPECT_FALSE(IsConflict(e));
  }

  // Two writers read the same version; the second write is a 409 Conflict.
  auto first = client_->Get(r::kConfigMaps, "default", "a");
  auto second = first;
  first["data"]["k"] = "1";
  second["data"]["k"] = "2";
  client_->Update(r::kConfigMaps, first);
  try {
    client_->Update(r::kConfigMaps, second);
    FAIL() << "stale update accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(IsConflict(e));
    EXPECT_TRUE(IsRetryable(e));
    EXPECT_EQ(dynamic_cast<const ApiError&>(e).reason(), "Conflict");
  }
  EXPECT_EQ(client_->Get(r::kConfigMaps, "default", "a")["data"]["k"], "1");
}

TEST_F(ClientTest, StatusSubresourceSeparatesSpecFromStatus) {
  cluster_.RegisterCrd();
  auto job = k8s::testing::Job("fmnist");
  job["status"] = {{"state", "Running"}};
  const auto created = client_->Create(r::kAutoDistJobs, "default", job);
  EXPECT_FALSE(created.contains("status"));  // status is not written through the main resource

  auto with_status = created;
  with_status["status"] = {{"state", "Running"}};
  with_status["spec"]["resources"]["workers"] = 7;  // ignored by the status subresource
  const auto after = client_->UpdateStatus(r::kAutoDistJobs, with_status);
  EXPECT_EQ(after["status"]["state"], "Running");
  EXPECT_EQ(after["spec"]["resources"]["workers"], 2);
  EXPECT_EQ(after["metadata"]["generation"], created["metadata"]["generation"]);

  const auto patched = client_->Patch(r::kAutoDistJobs, "default", "fmnist",
                                      {{"status", {{"progress", {{"step", 42}}}}}}, true);
  EXPECT_EQ(patched["status"]["state"], "Running");
  EXPECT_EQ(patched["status"]["progress"]["step"], 42);

  // A status update from a stale read conflicts too.
  try {
    client_->UpdateStatus(r::kAutoDistJobs, with_status);
    FAIL() << "stale status update accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(IsConflict(e)) << e.what();
  }
}

TEST_F(ClientTest, MergePatchAndLabelsWithSpecialCharacters) {
  client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
  const auto patched = client_->Patch(r::kConfigMaps, "default", "a",
                                      {{"metadata", {{"labels", {{"autodist.io/job", "j1"}}}}},
                                       {"data", {{"k", nullptr}, {"n", "1"}}}});
  EXPECT_FALSE(patched["data"].contains("k"));
  EXPECT_EQ(patched["data"]["n"], "1");
  ListOptions options;
  options.label_selector = "autodist.io/job=j1,!absent";
  EXPECT_EQ(client_->List(r::kConfigMaps, "default", options)["items"].size(), 1u);
}

TEST_F(ClientTest, DeletePreconditionsAndPropagation) {
  const auto a = client_->Create(r::kConfigMaps, "default", ConfigMap("a"));
  DeleteOptions stale;
  stale.precondition_resource_version = "1";
  EXPECT_THROW(client_->Delete(r::kConfigMaps, "default", "a", stale), ApiError);

  // A dependent of `a` goes with it (background propagation through ownerReferences).
  auto child = ConfigMap("child");
  child["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "a"}, {"uid", a["metadata"]["uid"]}}};
  client_->Create(r::kConfigMaps, "default", child);
  DeleteOptions options;
  options.propagation_policy = "Background";
  options.precondition_uid = a["metadata"]["uid"].get<std::string>();
  client_->Delete(r::kConfigMaps, "default", "a", options);
  EXPECT_TRUE(testing::Eventually([&] {
    try {
      client_->Get(r::kConfigMaps, "default", "child");
      return false;
    } catch (const Error& e) {
      return IsNotFound(e);
    }
  }));

  DeleteOptions bad;
  bad.propagation_policy = "Sideways";
  try {
    client_->Delete(r::kConfigMaps, "default", "child", bad);
    FAIL() << "deleted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.http_code(), 400);
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST_F(ClientTest, ListAllFollowsContinueTokens) {
  for (int i = 0; i < 7; ++i) {
    client_->Create(r::kConfigMaps, "default", ConfigMap("cm" + std::to_string(i)));
  }
  ListOptions page;
  page.limit = 3;
  const auto first = client_->List(r::kConfigMaps, "default", page);
  EXPECT_EQ(first["items"].size(), 3u);
  EXPECT_FALSE(first["metadata"]["continue"].get<std::string>().empty());

  const auto all = client_->ListAll(r::kConfigMaps, "default", page);
  EXPECT_EQ(all["items"].size(), 7u);
  EXPECT_FALSE(all["metadata"].contains("continue"));
  EXPECT_EQ(cluster_.Requests()["list"]["configmaps"], 4);  // 1 + ceil(7 / 3)
}

TEST_F(ClientTest, InjectedServerErrorsAndThrottlingAreRetryable) {
  cluster_.InjectFailures(
      {{{"verb", "get"}, {"resource", "configmaps"}, {"code", 500}},
       {{"verb", "list"}, {"resource", "configmaps"}, {"code", 429}, {"retryAfterSeconds", 3}}});
  try {
    client_->Get(r::kConfigMaps, "default", "a");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.http_code(), 500);
    EXPECT_TRUE(IsRetryable(e));
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }
  try {
    client_->List(r::kConfigMaps, "default");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(IsTooManyRequests(e));
    EXPECT_EQ(e.status().retry_after_seconds, 3);
  }
  EXPECT_EQ(client_->List(r::kConfigMaps, "default")["items"].size(), 0u);  // faults used up
}

TEST_F(ClientTest, ObserverSeesEveryRequest) {
  std::mutex mutex;
  std::vector<std::pair<std::string, int>> seen;
  ClientOptions options;
  options.observer = [&](const std::string& verb, const Resource& resource, int code,
                         std::chrono::duration<double>) {
    std::lock_guard lock(mutex);
    seen.emplace_back(verb + " " + resource.Name(), code);
  };
  auto client = cluster_.NewClient(options);
  client->Create(r::kConfigMaps, "default", ConfigMap("a"));
  EXPECT_THROW(client->Get(r::kConfigMaps, "default", "b"), ApiError);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::pair<std::string, int>{"create configmaps", 201}));
  EXPECT_EQ(seen[1], (std::pair<std::string, int>{"get configmaps", 404}));
}

TEST(ClientUnreachableTest, RefusedConnectionIsUnavailable) {
  Config config;
  config.server = "http://127.0.0.1:1";  // nothing listens on port 1
  config.source = "test";
  ClientOptions options;
  options.request_timeout = std::chrono::seconds(2);
  Client client(config, options);
  try {
    client.Get(r::kPods, "default", "p");
    FAIL() << "reached";
  } catch (const ApiError&) {
    FAIL() << "a transport failure is not an API answer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_TRUE(IsRetryable(e));
    EXPECT_FALSE(IsNotFound(e));
  }
}

TEST(ClientConfigTest, UnusableTlsMaterialFailsAtConstruction) {
  Config config;
  config.server = "https://127.0.0.1:6443";
  config.source = "kubeconfig 'x' context 'y'";
  config.ca_pem = "not a certificate";
  try {
    Client client(config);
    FAIL() << "constructed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("kubeconfig 'x' context 'y'"), std::string::npos);
  }
}

TEST(ResourceTest, PathsForCoreGroupsAndClusterWideLists) {
  EXPECT_EQ(r::kPods.Path("ns", "p"), "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(r::kPods.Path(""), "/api/v1/pods");
  EXPECT_EQ(r::kAutoDistJobs.Path("ns", "j", "status"),
            "/apis/autodist.io/v1alpha1/namespaces/ns/autodistjobs/j/status");
  EXPECT_EQ(r::kLeases.ApiVersion(), "coordination.k8s.io/v1");
  EXPECT_EQ(r::kPodGroups.Name(), "podgroups.scheduling.x-k8s.io");
}

}  // namespace
}  // namespace autodist::kube
