// Graceful deletion of pods (the API server's pod strategy): a pod a node runs is marked
// Terminating for its grace period and stays until deleted with a grace period of 0, which the
// node's kubelet does once its containers stopped; unbound and ended pods go at once.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/k8s/clock.h"
#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::Call;

const char* const kPods = "/api/v1/namespaces/default/pods";
const char* const kJobs = "/apis/autodist.io/v1alpha1/namespaces/default/autodistjobs";

nlohmann::json Pod(const std::string& name, const std::string& node) {
  nlohmann::json pod = {{"metadata", {{"name", name}}},
                        {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

class GracefulDeletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ApiServerOptions options;
    options.collect_garbage = false;
    api_ = std::make_unique<ApiServer>(options);
  }
  testing::Reply Create(const nlohmann::json& pod) {
    testing::Reply reply = Call(*api_, "POST", kPods, pod);
    EXPECT_EQ(reply.status, 201) << reply.body.dump(2);
    return reply;
  }
  testing::Reply Delete(const std::string& name, const std::string& query = "",
                        const nlohmann::json& body = nullptr) {
    return Call(*api_, "DELETE", std::string(kPods) + "/" + name + query, body);
  }
  nlohmann::json Get(const std::string& name) {
    const testing::Reply reply = Call(*api_, "GET", std::string(kPods) + "/" + name);
    return reply.status == 200 ? reply.body : nlohmann::json();
  }
  // Seconds from now to the pod's deletionTimestamp.
  static double SecondsLeft(const nlohmann::json& pod) {
    const auto at = ParseRfc3339(pod["metadata"].value("deletionTimestamp", ""));
    EXPECT_TRUE(at.has_value()) << pod.dump(2);
    if (!at) return -1;
    return std::chrono::duration<double>(*at - std::chrono::system_clock::now()).count();
  }

  std::unique_ptr<ApiServer> api_;
};

TEST_F(GracefulDeletionTest, ABoundPodIsTerminatingForItsGracePeriod) {
  Create(Pod("w0", "node-a"));
  const testing::Reply deleted = Delete("w0");
  EXPECT_EQ(deleted.status, 202);
  const nlohmann::json pod = Get("w0");
  ASSERT_TRUE(pod.is_object());
  EXPECT_EQ(pod["metadata"]["deletionGracePeriodSeconds"], 30);  // spec's default
  EXPECT_NEAR(SecondsLeft(pod), 30, 2);
  EXPECT_EQ(deleted.body["metadata"]["deletionTimestamp"], pod["metadata"]["deletionTimestamp"]);
  // The kubelet's status writes do not end it; only a deletion with no grace left does.
  nlohmann::json status = pod;
  status["status"] = {{"phase", "Failed"}};
  ASSERT_EQ(Call(*api_, "PUT", std::string(kPods) + "/w0/status", status).status, 200);
  EXPECT_TRUE(Get("w0").is_object());
  EXPECT_EQ(Delete("w0", "?gracePeriodSeconds=0").status, 200);
  EXPECT_TRUE(Get("w0").is_null());
}

TEST_F(GracefulDeletionTest, TheGracePeriodComesFromThePodOrTheRequestAndOnlyShrinks) {
  nlohmann::json pod = Pod("w0", "node-a");
  pod["spec"]["terminationGracePeriodSeconds"] = 7;
  Create(pod);
  EXPECT_EQ(Delete("w0").body["metadata"]["deletionGracePeriodSeconds"], 7);
  // Longer: nothing changes. Shorter: the end comes closer.
  const std::string marked = Get("w0")["metadata"]["deletionTimestamp"];
  EXPECT_EQ(Delete("w0", "?gracePeriodSeconds=60").status, 202);
  EXPECT_EQ(Get("w0")["metadata"]["deletionTimestamp"], marked);
  EXPECT_EQ(Delete("w0", "", {{"kind", "DeleteOptions"}, {"gracePeriodSeconds", 2}}).status, 202);
  EXPECT_EQ(Get("w0")["metadata"]["deletionGracePeriodSeconds"], 2);
  EXPECT_NEAR(SecondsLeft(Get("w0")), 2, 1.5);
  // A negative request counts as one second.
  Create(Pod("w1", "node-a"));
  EXPECT_EQ(Delete("w1", "?gracePeriodSeconds=-5").body["metadata"]["deletionGracePeriodSeconds"],
            1);
}

TEST_F(GracefulDeletionTest, UnboundAndEndedPodsGoAtOnce) {
  Create(Pod("pending", ""));
  EXPECT_EQ(Delete("pending").status, 200);
  EXPECT_TRUE(Get("pending").is_null());

  nlohmann::json done = Create(Pod("done", "node-a")).body;
  done["status"] = {{"phase", "Succeeded"}};
  ASSERT_EQ(Call(*api_, "PUT", std::string(kPods) + "/done/status", done).status, 200);
  EXPECT_EQ(Delete("done").status, 200);
  EXPECT_TRUE(Get("done").is_null());
}

TEST_F(GracefulDeletionTest, TheGarbageCollectorDeletesOwnedPodsGracefullyToo) {
  testing::RegisterCrd(*api_);
  const nlohmann::json job = Call(*api_, "POST", kJobs, testing::Job("job")).body;
  const nlohmann::json owner = {{"apiVersion", job["apiVersion"]},
                                {"kind", job["kind"]},
                                {"name", "job"},
                                {"uid", job["metadata"]["uid"]},
                                {"controller", true}};
  for (const auto& [name, node] :
       {std::pair<std::string, std::string>{"bound", "node-a"}, {"unbound", ""}}) {
    nlohmann::json pod = Pod(name, node);
    pod["metadata"]["ownerReferences"] = {owner};
    Create(pod);
  }
  ASSERT_EQ(Call(*api_, "DELETE", std::string(kJobs) + "/job").status, 200);
  EXPECT_TRUE(Get("unbound").is_null());
  const nlohmann::json bound = Get("bound");
  ASSERT_TRUE(bound.is_object());
  EXPECT_TRUE(bound["metadata"].contains("deletionTimestamp"));
}

TEST_F(GracefulDeletionTest, AMalformedGracePeriodIsABadRequest) {
  Create(Pod("w0", "node-a"));
  const testing::Reply query = Delete("w0", "?gracePeriodSeconds=soon");
  EXPECT_EQ(query.status, 400);
  EXPECT_EQ(query.body["message"], "gracePeriodSeconds: expected an integer, got \"soon\"");
  const testing::Reply body = Delete("w0", "", {{"gracePeriodSeconds", "5"}});
  EXPECT_EQ(body.status, 400);
  EXPECT_EQ(body.body["message"], "gracePeriodSeconds: expected an integer, got \"5\"");
  EXPECT_FALSE(Get("w0")["metadata"].contains("deletionTimestamp"));
}

}  // namespace
}  // namespace autodist::k8s
