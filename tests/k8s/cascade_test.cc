// Deletion: ownerReference cascades (Background, Foreground, Orphan), the garbage collector's
// sweep, finalizers and preconditions.
#include <gtest/gtest.h>

#include <thread>

#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::Call;

const char* const kJobs = "/apis/autodist.io/v1alpha1/namespaces/default/autodistjobs";
const char* const kPods = "/api/v1/namespaces/default/pods";
const char* const kConfigMaps = "/api/v1/namespaces/default/configmaps";

nlohmann::json OwnerRef(const nlohmann::json& owner) {
  return {{"apiVersion", owner["apiVersion"]},
          {"kind", owner["kind"]},
          {"name", owner["metadata"]["name"]},
          {"uid", owner["metadata"]["uid"]},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

nlohmann::json Owned(const std::string& name, nlohmann::json owners) {
  return {{"metadata", {{"name", name}, {"ownerReferences", owners}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
}

class CascadeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ApiServerOptions options;
    options.collect_garbage = false;  // sweeps are triggered explicitly
    api_ = std::make_unique<ApiServer>(options);
    testing::RegisterCrd(*api_);
    job_ = Call(*api_, "POST", kJobs, testing::Job("job")).body;
    ASSERT_EQ(Call(*api_, "POST", kPods, Owned("w0", {OwnerRef(job_)})).status, 201);
    ASSERT_EQ(Call(*api_, "POST", kPods, Owned("w1", {OwnerRef(job_)})).status, 201);
    nlohmann::json cm = {
        {"metadata", {{"name", "job-autodist"}, {"ownerReferences", {OwnerRef(job_)}}}}};
    ASSERT_EQ(Call(*api_, "POST", kConfigMaps, cm).status, 201);
  }
  int Status(const std::string& path) { return Call(*api_, "GET", path).status; }

  std::unique_ptr<ApiServer> api_;
  nlohmann::json job_;
};

TEST_F(CascadeTest, HeldCollectionLetsDependentsOutliveTheirOwnerUntilReleased) {
  api_->store().HoldGarbageCollection(true);
  ASSERT_EQ(Call(*api_, "DELETE", std::string(kJobs) + "/job").status, 200);
  EXPECT_EQ(Status(std::string(kJobs) + "/job"), 404);
  // A job of the same name again: the old children still hold their names and their old owner.
  const nlohmann::json again = Call(*api_, "POST", kJobs, testing::Job("job")).body;
  ASSERT_NE(again["metadata"]["uid"], job_["metadata"]["uid"]);
  const auto old_pod = Call(*api_, "GET", std::string(kPods) + "/w0");
  ASSERT_EQ(old_pod.status, 200);
  EXPECT_EQ(old_pod.body["metadata"]["ownerReferences"][0]["uid"], job_["metadata"]["uid"]);
  EXPECT_EQ(Call(*api_, "POST", kPods, Owned("w0", {OwnerRef(again)})).status, 409);
  api_->store().CollectGarbage();  // the sweep waits too
  EXPECT_EQ(Status(std::string(kConfigMaps) + "/job-autodist"), 200);

  api_->store().HoldGarbageCollection(false);
  EXPECT_EQ(Status(std::string(kPods) + "/w0"), 404);
  EXPECT_EQ(Status(std::string(kPods) + "/w1"), 404);
  EXPECT_EQ(Status(std::string(kConfigMaps) + "/job-autodist"), 404);
  EXPECT_EQ(Call(*api_, "POST", kPods, Owned("w0", {OwnerRef(again)})).status, 201);
}

TEST_F(CascadeTest, BackgroundDeletesDependents) {
  const auto deleted =
      Call(*api_, "DELETE", std::string(kJobs) + "/job", {{"propagationPolicy", "Background"}});
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(Status(std::string(kPods) + "/w0"), 404);
  EXPECT_EQ(Status(std::string(kPods) + "/w1"), 404);
  EXPECT_EQ(Status(std::string(kConfigMaps) + "/job-autodist"), 404);
}

TEST_F(CascadeTest, ForegroundDeletesDependentsTransitively) {
  const auto pod = Call(*api_, "GET", std::string(kPods) + "/w0").body;
  ASSERT_EQ(Call(*api_, "POST", kConfigMaps,
                 {{"metadata", {{"name", "grandchild"}, {"ownerReferences", {OwnerRef(pod)}}}}})
                .status,
            201);
  Call(*api_, "DELETE", std::string(kJobs) + "/job?propagationPolicy=Foreground");
  EXPECT_EQ(Status(std::string(kPods) + "/w0"), 404);
  EXPECT_EQ(Status(std::string(kConfigMaps) + "/grandchild"), 404);
}

TEST_F(CascadeTest, OrphanKeepsDependentsAndDropsTheReference) {
  Call(*api_, "DELETE", std::string(kJobs) + "/job", {{"propagationPolicy", "Orphan"}});
  const auto pod = Call(*api_, "GET", std::string(kPods) + "/w0");
  EXPECT_EQ(pod.status, 200);
  EXPECT_FALSE(pod.body["metadata"].contains("ownerReferences"));
}

TEST_F(CascadeTest, DependentWithAnotherLiveOwnerSurvives) {
  const auto other = Call(*api_, "POST", kJobs, testing::Job("other")).body;
  ASSERT_EQ(Call(*api_, "POST", kPods, Owned("shared", {OwnerRef(job_), OwnerRef(other)})).status,
            201);
  Call(*api_, "DELETE", std::string(kJobs) + "/job");
  const auto shared = Call(*api_, "GET", std::string(kPods) + "/shared");
  ASSERT_EQ(shared.status, 200);
  EXPECT_EQ(shared.body["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(shared.body["metadata"]["ownerReferences"][0]["name"], "other");
}

TEST_F(CascadeTest, GarbageCollectorRemovesObjectsWithMissingOwners) {
  nlohmann::json ghost = job_;
  ghost["metadata"]["uid"] = "00000000-0000-4000-8000-000000000000";
  ASSERT_EQ(Call(*api_, "POST", kPods, Owned("orphan", {OwnerRef(ghost)})).status, 201);
  api_->store().CollectGarbage();
  EXPECT_EQ(Status(std::string(kPods) + "/orphan"), 404);
  EXPECT_EQ(Status(std::string(kPods) + "/w0"), 200);
}

TEST_F(CascadeTest, FinalizersHoldTheObjectUntilRemoved) {
  Call(*api_, "PATCH", std::string(kJobs) + "/job",
       {{"metadata", {{"finalizers", {"autodist.io/cleanup"}}}}}, "application/merge-patch+json");
  const auto marked = Call(*api_, "DELETE", std::string(kJobs) + "/job");
  EXPECT_EQ(marked.status, 202);
  EXPECT_TRUE(marked.body["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(Status(std::string(kPods) + "/w0"), 200);  // the owner still exists
  const auto removed =
      Call(*api_, "PATCH", std::string(kJobs) + "/job", {{"metadata", {{"finalizers", nullptr}}}},
           "application/merge-patch+json");
  EXPECT_EQ(removed.status, 200);
  EXPECT_EQ(Status(std::string(kJobs) + "/job"), 404);
  EXPECT_EQ(Status(std::string(kPods) + "/w0"), 404);
}

TEST_F(CascadeTest, PreconditionsAndMissingObjects) {
  const auto wrong_uid = Call(*api_, "DELETE", std::string(kJobs) + "/job",
                              {{"preconditions", {{"uid", "not-the-uid"}}}});
  EXPECT_EQ(wrong_uid.status, 409);
  EXPECT_EQ(wrong_uid.body["reason"], "Conflict");
  EXPECT_EQ(Call(*api_, "DELETE", std::string(kJobs) + "/nope").status, 404);
  EXPECT_EQ(Call(*api_, "DELETE", std::string(kJobs) + "/job?propagationPolicy=Sideways").status,
            400);
}

TEST(Garbage, SweepRunsOnTheTicker) {
  ApiServer api;  // collect_garbage defaults to true
  nlohmann::json pod = Owned("p", {{{"apiVersion", "v1"},
                                    {"kind", "ConfigMap"},
                                    {"name", "gone"},
                                    {"uid", "11111111-0000-4000-8000-000000000000"}}});
  ASSERT_EQ(Call(api, "POST", kPods, pod).status, 201);
  for (int i = 0; i < 50 && Call(api, "GET", std::string(kPods) + "/p").status == 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(Call(api, "GET", std::string(kPods) + "/p").status, 404);
}

}  // namespace
}  // namespace autodist::k8s
