// The informers' transforms (observed_fields.h): what they keep of pods, ConfigMaps and Services
// the operator made, and that a member judged from a slimmed pod is judged as from the full one.
// (reconcile_test_support.cc slims every child it observes, so every scenario of the other tests
// runs on slimmed objects too.)
#include "operator/reconcile/observed_fields.h"

#include <gtest/gtest.h>

#include "operator/reconcile/names.h"
#include "operator/reconcile/observed_pods.h"
#include "reconcile_test_support.h"

namespace autodist::reconcile::testing {
namespace {

// The children of the test job, created by its first reconciles, as the API would return them
// (plus what the API server adds: resourceVersion, managedFields).
class ObservedFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.Settle(At(0));
    ASSERT_EQ(cluster_.pods().size(), 3u);
    for (auto& [name, pod] : cluster_.pods()) {
      pod["metadata"]["resourceVersion"] = "7";
      pod["metadata"]["creationTimestamp"] = "2025-01-01T10:00:00Z";
      pod["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "autodist"}}});
    }
  }

  nlohmann::json& pod(const std::string& name) { return cluster_.pods().at(name); }

  Cluster cluster_{JobObject()};
};

TEST_F(ObservedFieldsTest, APodKeepsItsMetadataAndHowItsRuntimeRunsOrEnded) {
  nlohmann::json& full = pod("fmnist-worker-1");
  full["metadata"]["deletionTimestamp"] = "2025-01-01T10:01:00Z";
  full["spec"]["nodeName"] = "node-7";
  full["spec"]["schedulerName"] = "volcano";
  full["status"] = {
      {"phase", "Running"},
      {"podIP", "10.0.0.7"},
      {"conditions", nlohmann::json::array({{{"type", "Ready"}, {"status", "True"}},
                                            {{"type", "PodScheduled"}, {"status", "True"}}})},
      {"containerStatuses",
       nlohmann::json::array({{{"name", "sidecar"}, {"state", {{"running", {{"startedAt", "t"}}}}}},
                              {{"name", kRuntimeContainer},
                               {"restartCount", 0},
                               {"image", "registry.test/autodist-runtime:1.0"},
                               {"lastState", {{"terminated", {{"exitCode", 1}}}}},
                               {"state",
                                {{"terminated",
                                  {{"exitCode", 137},
                                   {"reason", "OOMKilled"},
                                   {"message", std::string(4096, 'x')},
                                   {"finishedAt", "t"}}}}}}})}};

  const nlohmann::json slim = SlimPod(full);
  EXPECT_EQ(slim["apiVersion"], "v1");
  EXPECT_EQ(slim["kind"], "Pod");
  const nlohmann::json& metadata = full["metadata"];
  EXPECT_EQ(slim["metadata"],
            (nlohmann::json{{"name", "fmnist-worker-1"},
                            {"namespace", "ml"},
                            {"uid", metadata["uid"]},
                            {"resourceVersion", "7"},
                            {"labels", metadata["labels"]},
                            {"ownerReferences", metadata["ownerReferences"]},
                            {"deletionTimestamp", "2025-01-01T10:01:00Z"},
                            {"creationTimestamp", metadata["creationTimestamp"]}}));
  // Of the spec, where scheduling stands: who binds the pod, and the node it is bound to.
  EXPECT_EQ(slim["spec"], (nlohmann::json{{"nodeName", "node-7"}, {"schedulerName", "volcano"}}));
  EXPECT_EQ(
      slim["status"],
      (nlohmann::json{
          {"phase", "Running"},
          {"conditions", nlohmann::json::array({{{"type", "PodScheduled"}, {"status", "True"}}})},
          {"containerStatuses",
           nlohmann::json::array({{{"name", kRuntimeContainer},
                                   {"restartCount", 0},
                                   {"state",
                                    {{"terminated",
                                      {{"exitCode", 137},
                                       {"reason", "OOMKilled"},
                                       {"finishedAt", "t"},
                                       // Only the message's last line, cut to 512 bytes.
                                       {"message", std::string(509, 'x') + "..."}}}}}}})}}));
  // A fraction of the full object.
  EXPECT_LT(slim.dump().size() * 4, full.dump().size());
}

TEST_F(ObservedFieldsTest, MembersAreJudgedAsFromTheFullPods) {
  cluster_.SetPhase("fmnist-worker-0", "Running");
  cluster_.Exit("fmnist-worker-1", 143, "Error");
  nlohmann::json& evicted = pod("fmnist-ps-0");
  evicted["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}, {"message", "low memory"}};
  evicted["metadata"]["deletionTimestamp"] = "2025-01-01T10:01:00Z";

  std::vector<nlohmann::json> full;
  std::vector<nlohmann::json> slim;
  for (const auto& [name, object] : cluster_.pods()) {
    full.push_back(object);
    slim.push_back(SlimPod(object));
  }
  const JobRef job = ReadJobRef(cluster_.job());
  const std::vector<ObservedPod> from_full = ObservePods(full, job);
  const std::vector<ObservedPod> from_slim = ObservePods(slim, job);
  ASSERT_EQ(from_full.size(), 3u);
  ASSERT_EQ(from_slim.size(), from_full.size());
  for (size_t i = 0; i < from_full.size(); ++i) {
    const ObservedPod& a = from_full[i];
    const ObservedPod& b = from_slim[i];
    SCOPED_TRACE(a.name);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.uid, b.uid);
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.generation, b.generation);
    EXPECT_EQ(a.phase, b.phase);
    EXPECT_EQ(a.exit_code, b.exit_code);
    EXPECT_EQ(a.reason, b.reason);
    EXPECT_EQ(a.terminating, b.terminating);
  }
}

TEST_F(ObservedFieldsTest, AConfigMapKeepsItsMetadataOnly) {
  ASSERT_TRUE(cluster_.config_map().has_value());
  const nlohmann::json& full = *cluster_.config_map();
  ASSERT_TRUE(full["data"].contains(kStrategyKey));
  const nlohmann::json slim = SlimToMetadata(full);
  EXPECT_EQ(slim["metadata"]["name"], "fmnist-autodist");
  EXPECT_EQ(slim["metadata"]["labels"], full["metadata"]["labels"]);
  EXPECT_FALSE(slim.contains("data"));
}

TEST_F(ObservedFieldsTest, AServiceKeepsItsMetadata) {
  ASSERT_TRUE(cluster_.service().has_value());
  const nlohmann::json slim = SlimToMetadata(*cluster_.service());
  EXPECT_EQ(slim["kind"], "Service");
  EXPECT_EQ(slim["metadata"]["name"], "fmnist");
  EXPECT_EQ(slim["metadata"]["ownerReferences"],
            (*cluster_.service())["metadata"]["ownerReferences"]);
  EXPECT_FALSE(slim.contains("spec"));
}

TEST(ObservedFields, AJobLosesOnlyWhatKubectlAndTheServerAddForThemselves) {
  const nlohmann::json spec = {{"resources", {{"workers", 2}, {"parameterServers", 1}}}};
  nlohmann::json full = {
      {"apiVersion", "autodist.io/v1alpha1"},
      {"kind", "AutoDistJob"},
      {"metadata",
       {{"name", "j"},
        {"namespace", "ml"},
        {"uid", "u-1"},
        {"resourceVersion", "7"},
        {"generation", 2},
        {"labels", {{"team", "a"}}},
        {"annotations",
         {{"kubectl.kubernetes.io/last-applied-configuration", spec.dump()}, {"note", "kept"}}},
        {"managedFields", nlohmann::json::array({{{"manager", "kubectl"}}})}}},
      {"spec", spec},
      {"status", {{"conditions", nlohmann::json::array()}}}};
  const nlohmann::json slim = SlimJob(full);
  nlohmann::json expected = full;
  expected["metadata"].erase("managedFields");
  expected["metadata"]["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
  EXPECT_EQ(slim, expected);
  // An annotation map left empty goes too; a job without metadata is left alone.
  full["metadata"]["annotations"].erase("note");
  EXPECT_FALSE(SlimJob(full)["metadata"].contains("annotations"));
  EXPECT_EQ(SlimJob({{"spec", spec}}), (nlohmann::json{{"spec", spec}}));
}

TEST(ObservedFields, ToleratesObjectsWithoutTheFields) {
  EXPECT_EQ(SlimToMetadata(nlohmann::json::object()),
            (nlohmann::json{{"metadata", nlohmann::json::object()}}));
  const nlohmann::json pending = {{"metadata", {{"name", "p"}}},
                                  {"status", {{"containerStatuses", "not a list"}}}};
  EXPECT_EQ(SlimPod(pending)["status"],
            (nlohmann::json{{"containerStatuses", nlohmann::json::array()}}));
}

}  // namespace
}  // namespace autodist::reconcile::testing
