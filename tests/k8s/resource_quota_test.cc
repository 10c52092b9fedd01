// ResourceQuota admission on pod creates: containers must set what a quota constrains, and a pod
// past a hard limit is refused, both with the real plugin's 403 messages.
#include "tests/k8s/resource_quota.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/k8s/api_error.h"
#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::Call;

const char* const kPods = "/api/v1/namespaces/default/pods";
const char* const kQuotas = "/api/v1/namespaces/default/resourcequotas";

nlohmann::json Pod(const std::string& name, const nlohmann::json& resources = nullptr) {
  nlohmann::json container = {{"name", "main"}, {"image", "i"}};
  if (!resources.is_null()) container["resources"] = resources;
  return {{"metadata", {{"name", name}}}, {"spec", {{"containers", {container}}}}};
}

nlohmann::json Quota(const std::string& name, const nlohmann::json& hard) {
  return {{"metadata", {{"name", name}}}, {"spec", {{"hard", hard}}}};
}

TEST(QuantityTest, ParsesTheSuffixesKubernetesWrites) {
  EXPECT_EQ(ParseQuantity("2"), 2.0L);
  EXPECT_EQ(ParseQuantity("500m"), 0.5L);
  EXPECT_EQ(ParseQuantity("1.5"), 1.5L);
  EXPECT_EQ(ParseQuantity("4Gi"), 4.0L * 1024 * 1024 * 1024);
  EXPECT_EQ(ParseQuantity("128Mi"), 128.0L * 1024 * 1024);
  EXPECT_EQ(ParseQuantity("1G"), 1e9L);
  EXPECT_EQ(ParseQuantity("2k"), 2000.0L);
  EXPECT_EQ(ParseQuantity("1e3"), 1000.0L);
  for (const char* bad : {"", "Gi", "1.2.3", "4GB", "1e", "x1"}) {
    EXPECT_FALSE(ParseQuantity(bad).has_value()) << bad;
  }
}

class ResourceQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override { api_ = std::make_unique<ApiServer>(ApiServerOptions{}); }
  testing::Reply CreatePod(const nlohmann::json& pod) { return Call(*api_, "POST", kPods, pod); }
  void CreateQuota(const nlohmann::json& quota) {
    ASSERT_EQ(Call(*api_, "POST", kQuotas, quota).status, 201);
  }
  std::unique_ptr<ApiServer> api_;
};

TEST_F(ResourceQuotaTest, WithoutAQuotaEveryPodIsAdmitted) {
  EXPECT_EQ(CreatePod(Pod("p")).status, 201);
}

TEST_F(ResourceQuotaTest, AQuotaOnCpuAndMemoryRequiresEveryContainerToSetThem) {
  CreateQuota(Quota("compute", {{"limits.cpu", "4"}, {"requests.memory", "8Gi"}}));
  const testing::Reply refused = CreatePod(Pod("bare"));
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.body["reason"], "Forbidden");
  EXPECT_EQ(refused.body["message"],
            "pods \"bare\" is forbidden: failed quota: compute: must specify limits.cpu for: "
            "main; requests.memory for: main");
  // A memory limit stands for the request (the API server's defaulting).
  EXPECT_EQ(CreatePod(Pod("set", {{"limits", {{"cpu", "1"}, {"memory", "1Gi"}}}})).status, 201);
}

TEST_F(ResourceQuotaTest, APodPastAHardLimitIsRefusedNamingRequestedUsedAndLimited) {
  CreateQuota(Quota("team", {{"pods", "2"}, {"requests.cpu", "1500m"}}));
  const nlohmann::json half = {{"requests", {{"cpu", "500m"}}}};
  ASSERT_EQ(CreatePod(Pod("a", half)).status, 201);
  ASSERT_EQ(CreatePod(Pod("b", half)).status, 201);
  const testing::Reply refused = CreatePod(Pod("c", {{"requests", {{"cpu", "1"}}}}));
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.body["message"],
            "pods \"c\" is forbidden: exceeded quota: team, requested: pods=1,requests.cpu=1, "
            "used: pods=2,requests.cpu=1, limited: pods=2,requests.cpu=1500m");
  // A pod that ended is no longer charged.
  nlohmann::json done = Call(*api_, "GET", std::string(kPods) + "/a").body;
  done["status"] = {{"phase", "Succeeded"}};
  ASSERT_EQ(Call(*api_, "PUT", std::string(kPods) + "/a/status", done).status, 200);
  EXPECT_EQ(CreatePod(Pod("c", half)).status, 201);
}

TEST_F(ResourceQuotaTest, ExtendedResourcesAreChargedByTheirRequestsOnly) {
  CreateQuota(Quota("gpus", {{"requests.nvidia.com/gpu", "1"}}));
  // No GPU: nothing to charge, nothing to specify.
  EXPECT_EQ(CreatePod(Pod("cpu-only")).status, 201);
  const nlohmann::json gpu = {{"limits", {{"nvidia.com/gpu", "1"}}}};
  EXPECT_EQ(CreatePod(Pod("g0", gpu)).status, 201);
  const testing::Reply refused = CreatePod(Pod("g1", gpu));
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.body["message"],
            "pods \"g1\" is forbidden: exceeded quota: gpus, requested: "
            "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=1, limited: "
            "requests.nvidia.com/gpu=1");
}

TEST(ResourceQuotaFormatTest, MemoryIsShownInBinaryUnits) {
  const std::vector<nlohmann::json> quotas = {Quota("mem", {{"requests.memory", "1Gi"}})};
  const std::vector<nlohmann::json> pods = {Pod("a", {{"requests", {{"memory", "768Mi"}}}})};
  try {
    EnforceResourceQuotas(quotas, pods, Pod("b", {{"requests", {{"memory", "512Mi"}}}}));
    ADD_FAILURE() << "admitted";
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()),
              "pods \"b\" is forbidden: exceeded quota: mem, requested: requests.memory=512Mi, "
              "used: requests.memory=768Mi, limited: requests.memory=1Gi");
  }
}

}  // namespace
}  // namespace autodist::k8s
