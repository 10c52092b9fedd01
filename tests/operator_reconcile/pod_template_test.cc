// A job with a pod template: the runtime is injected as a sidecar, and everything of the user's
// pod stays as written.
#include "operator/reconcile/pod_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reconcile_test_support.h"

namespace autodist::reconcile {
namespace {

using testing::At;
using testing::Cluster;
using testing::JobObject;

const nlohmann::json kTemplate = nlohmann::json::parse(R"({
  "metadata": {
    "labels": {"team": "vision", "autodist.io/job-name": "spoofed"},
    "annotations": {"sidecar.istio.io/inject": "false"}
  },
  "spec": {
    "nodeSelector": {"pool": "gpu"},
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "serviceAccountName": "trainer",
    "restartPolicy": "Always",
    "initContainers": [{"name": "fetch", "image": "busybox", "command": ["true"]}],
    "containers": [
      {"name": "log-shipper", "image": "fluent-bit:2",
       "volumeMounts": [{"name": "data", "mountPath": "/data"},
                        {"name": "logs", "mountPath": "/logs"}]},
      {"name": "metrics", "image": "exporter:1",
       "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}]}
    ],
    "volumes": [
      {"name": "data", "persistentVolumeClaim": {"claimName": "fmnist-data"}},
      {"name": "logs", "emptyDir": {}}
    ]
  }
})");

const nlohmann::json& ContainerNamed(const nlohmann::json& pod, const std::string& name) {
  for (const nlohmann::json& container : pod["spec"]["containers"]) {
    if (container["name"] == name) return container;
  }
  static const nlohmann::json kNone;
  ADD_FAILURE() << "no container " << name;
  return kNone;
}

TEST(PodTemplateTest, RuntimeIsInjectedAsASidecarKeepingTheUsersPod) {
  Cluster cluster(JobObject({{"template", kTemplate}}));
  cluster.Reconcile(At(0));
  const nlohmann::json& pod = cluster.pod("fmnist-worker-0");
  const nlohmann::json& spec = pod["spec"];
  // The user's containers first, untouched; the runtime after them.
  ASSERT_EQ(spec["containers"].size(), 3U);
  EXPECT_EQ(spec["containers"][0], kTemplate["spec"]["containers"][0]);
  EXPECT_EQ(spec["containers"][1], kTemplate["spec"]["containers"][1]);
  EXPECT_EQ(spec["containers"][2]["name"], "autodist-runtime");
  EXPECT_EQ(spec["initContainers"], kTemplate["spec"]["initContainers"]);
  EXPECT_EQ(spec["nodeSelector"], kTemplate["spec"]["nodeSelector"]);
  EXPECT_EQ(spec["tolerations"], kTemplate["spec"]["tolerations"]);
  EXPECT_EQ(spec["serviceAccountName"], "trainer");
  // The operator restarts gangs; the template's restartPolicy cannot stand.
  EXPECT_EQ(spec["restartPolicy"], "Never");
  // The user's volumes stay, the config volume joins them.
  ASSERT_EQ(spec["volumes"].size(), 3U);
  EXPECT_EQ(spec["volumes"][0], kTemplate["spec"]["volumes"][0]);
  EXPECT_EQ(spec["volumes"][1], kTemplate["spec"]["volumes"][1]);
  EXPECT_EQ(spec["volumes"][2]["name"], "autodist-config");
  // The runtime sees the user's volumes where the user's containers do (first mount per path).
  EXPECT_EQ(ContainerNamed(pod, "autodist-runtime")["volumeMounts"], nlohmann::json::parse(R"([
    {"name": "autodist-config", "mountPath": "/etc/autodist", "readOnly": true},
    {"name": "data", "mountPath": "/data"},
    {"name": "logs", "mountPath": "/logs"}])"));
  // Template labels and annotations are kept; the operator's labels win.
  EXPECT_EQ(pod["metadata"]["labels"]["team"], "vision");
  EXPECT_EQ(pod["metadata"]["labels"]["autodist.io/job-name"], "fmnist");
  EXPECT_EQ(pod["metadata"]["annotations"]["sidecar.istio.io/inject"], "false");
}

TEST(PodTemplateTest, AUserRuntimeContainerIsCompletedNotReplaced) {
  nlohmann::json pod_template = kTemplate;
  pod_template["spec"]["containers"].push_back(nlohmann::json::parse(R"({
    "name": "autodist-runtime", "image": "my-registry/runtime:custom",
    "args": ["--ignored"],
    "env": [{"name": "OMP_NUM_THREADS", "value": "4"}, {"name": "NCCL_DEBUG", "value": "INFO"}],
    "resources": {"limits": {"memory": "8Gi"}},
    "volumeMounts": [{"name": "scratch", "mountPath": "/logs"}]})"));
  Cluster cluster(
      JobObject({{"template", pod_template},
                 {"resources", {{"workers", 1}, {"parameterServers", 0}, {"cpu", "2"}}}}));
  cluster.Reconcile(At(0));
  const nlohmann::json& pod = cluster.pod("fmnist-worker-0");
  ASSERT_EQ(pod["spec"]["containers"].size(), 3U);
  const nlohmann::json& runtime = ContainerNamed(pod, "autodist-runtime");
  EXPECT_EQ(runtime["image"], "my-registry/runtime:custom");
  EXPECT_EQ(runtime["command"], nlohmann::json::array({"autodist-runtime"}));
  EXPECT_EQ(runtime["args"][0], "--job");
  std::map<std::string, std::string> env;
  for (const nlohmann::json& entry : runtime["env"]) env[entry["name"]] = entry["value"];
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "4");
  EXPECT_EQ(env.at("NCCL_DEBUG"), "WARN");  // the operator's setting wins
  EXPECT_EQ(env.at("AUTODIST_ROLE"), "worker");
  EXPECT_EQ(runtime["resources"],
            nlohmann::json::parse(R"({"limits": {"memory": "8Gi"}, "requests": {"cpu": "2"}})"));
  // Its own mount at /logs stays (not the shipper's), /data is shared, config is added.
  EXPECT_EQ(runtime["volumeMounts"], nlohmann::json::parse(R"([
    {"name": "scratch", "mountPath": "/logs"},
    {"name": "autodist-config", "mountPath": "/etc/autodist", "readOnly": true},
    {"name": "data", "mountPath": "/data"}])"));
}

TEST(PodTemplateTest, InjectionIntoAnEmptySpec) {
  const nlohmann::json runtime = {{"name", "autodist-runtime"}, {"image", "i"}};
  const nlohmann::json volumes = nlohmann::json::array(
      {{{"name", "autodist-config"}, {"emptyDir", nlohmann::json::object()}}});
  const nlohmann::json spec = InjectRuntime(nullptr, runtime, volumes);
  EXPECT_EQ(spec["containers"], nlohmann::json::array({runtime}));
  EXPECT_EQ(spec["volumes"], volumes);
}

TEST(PodTemplateTest, AUserVolumeNamedLikeOursIsReplaced) {
  const nlohmann::json user = nlohmann::json::parse(R"({
    "volumes": [{"name": "autodist-config", "emptyDir": {}}, {"name": "keep", "emptyDir": {}}]})");
  const nlohmann::json ours = nlohmann::json::array(
      {{{"name", "autodist-config"}, {"configMap", {{"name", "j-autodist"}}}}});
  const nlohmann::json spec = InjectRuntime(user, {{"name", "autodist-runtime"}}, ours);
  EXPECT_EQ(spec["volumes"][0], ours[0]);
  EXPECT_EQ(spec["volumes"][1]["name"], "keep");
}

TEST(PodTemplateTest, TemplateMetadataAloneKeepsTheDefaultContainer) {
  Cluster cluster(JobObject({{"template", {{"metadata", {{"labels", {{"a", "b"}}}}}}}}));
  cluster.Reconcile(At(0));
  const nlohmann::json& pod = cluster.pod("fmnist-ps-0");
  ASSERT_EQ(pod["spec"]["containers"].size(), 1U);
  EXPECT_EQ(pod["metadata"]["labels"]["a"], "b");
}

}  // namespace
}  // namespace autodist::reconcile
