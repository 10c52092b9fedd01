// A job with a pod template: the runtime is injected as a sidecar, and everything of the user's
// pod stays as written.
#include "operator/reconcile/pod_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/conditions.h"
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
  // The user's volumes stay, the config and credentials volumes and the runtime's scratch ones
  // join them.
  ASSERT_EQ(spec["volumes"].size(), 6U);
  EXPECT_EQ(spec["volumes"][0], kTemplate["spec"]["volumes"][0]);
  EXPECT_EQ(spec["volumes"][1], kTemplate["spec"]["volumes"][1]);
  EXPECT_EQ(spec["volumes"][2]["name"], "autodist-config");
  EXPECT_EQ(spec["volumes"][3]["name"], "autodist-tls");
  EXPECT_EQ(spec["volumes"][4]["name"], "autodist-tmp");
  EXPECT_EQ(spec["volumes"][5]["name"], "autodist-shm");
  // The runtime sees the user's volumes where the user's containers do (first mount per path).
  EXPECT_EQ(ContainerNamed(pod, "autodist-runtime")["volumeMounts"], nlohmann::json::parse(R"([
    {"name": "autodist-config", "mountPath": "/etc/autodist", "readOnly": true},
    {"name": "autodist-tls", "mountPath": "/etc/autodist-tls/worker-0", "readOnly": true},
    {"name": "data", "mountPath": "/data"},
    {"name": "logs", "mountPath": "/logs"},
    {"name": "autodist-tmp", "mountPath": "/tmp"},
    {"name": "autodist-shm", "mountPath": "/dev/shm"}])"));
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
    {"name": "autodist-tls", "mountPath": "/etc/autodist-tls/worker-0", "readOnly": true},
    {"name": "data", "mountPath": "/data"},
    {"name": "autodist-tmp", "mountPath": "/tmp"},
    {"name": "autodist-shm", "mountPath": "/dev/shm"}])"));
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

// ---- hardening: the restricted Pod Security Standard, a read-only root, no token ------------

// The volume of `pod` named `name`; null when there is none.
nlohmann::json VolumeNamed(const nlohmann::json& pod, const std::string& name) {
  for (const nlohmann::json& volume : pod["spec"]["volumes"]) {
    if (volume["name"] == name) return volume;
  }
  return nullptr;
}

// mountPath -> the volume mounted there, in the runtime container.
std::map<std::string, nlohmann::json> RuntimeMounts(const nlohmann::json& pod) {
  std::map<std::string, nlohmann::json> mounts;
  for (const nlohmann::json& mount : ContainerNamed(pod, "autodist-runtime")["volumeMounts"]) {
    mounts[mount["mountPath"]] = VolumeNamed(pod, mount["name"]);
  }
  return mounts;
}

TEST(PodHardeningTest, EveryPodIsRestrictedWithAReadOnlyRootAndNoToken) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  for (const std::string name : {"fmnist-worker-0", "fmnist-worker-1", "fmnist-ps-0"}) {
    SCOPED_TRACE(name);
    const nlohmann::json& pod = cluster.pod(name);
    const nlohmann::json& spec = pod["spec"];
    EXPECT_EQ(spec["automountServiceAccountToken"], false);
    EXPECT_EQ(spec["securityContext"]["runAsNonRoot"], true);
    EXPECT_EQ(spec["securityContext"]["runAsUser"], 65532);
    EXPECT_EQ(spec["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    const nlohmann::json& security = ContainerNamed(pod, "autodist-runtime")["securityContext"];
    EXPECT_EQ(security["readOnlyRootFilesystem"], true);
    EXPECT_EQ(security["allowPrivilegeEscalation"], false);
    EXPECT_EQ(security["capabilities"]["drop"], nlohmann::json::array({"ALL"}));
    // Writable: /tmp on disk, /dev/shm in memory (NCCL's shared-memory transport).
    const std::map<std::string, nlohmann::json> mounts = RuntimeMounts(pod);
    ASSERT_TRUE(mounts.contains("/tmp"));
    EXPECT_EQ(mounts.at("/tmp")["emptyDir"], nlohmann::json::object());
    ASSERT_TRUE(mounts.contains("/dev/shm"));
    EXPECT_EQ(mounts.at("/dev/shm")["emptyDir"]["medium"], "Memory");
  }
}

TEST(PodHardeningTest, OutputDirectoriesWithoutAVolumeGetAnEmptyDirAndOneWarning) {
  nlohmann::json pod_template = kTemplate;  // mounts a persistentVolumeClaim at /data
  Cluster cluster(
      JobObject({{"template", pod_template},
                 {"training",
                  {{"checkpoint", {{"path", "/data/ckpt"}}},  // on the template's claim
                   {"tensorboard", {{"path", "/runs"}}},
                   {"exportPath", "out/model.onnx"}}}}));  // relative: under the working directory
  const Plan plan = cluster.Reconcile(At(0));
  const std::map<std::string, nlohmann::json> mounts =
      RuntimeMounts(cluster.pod("fmnist-worker-0"));
  EXPECT_FALSE(mounts.contains("/data/ckpt")) << "the claim at /data holds the checkpoints";
  ASSERT_TRUE(mounts.contains("/runs"));
  EXPECT_EQ(mounts.at("/runs")["emptyDir"], nlohmann::json::object());
  ASSERT_TRUE(mounts.contains("/workspace/out"));
  EXPECT_TRUE(mounts.at("/workspace/out").contains("emptyDir"));
  std::vector<std::string> warnings;
  for (const auto& event : plan.events) {
    if (event.reason == kReasonOutputNotPersistent) warnings.push_back(event.message);
  }
  ASSERT_EQ(warnings.size(), 1U) << "said once per job, not per pod";
  EXPECT_EQ(warnings[0],
            "spec.training.tensorboard.path '/runs', spec.training.exportPath '/workspace/out' "
            "are on no volume of spec.template: each pod writes there to an emptyDir, deleted "
            "with the pod (a gang restart cannot resume from checkpoints kept so); mount a "
            "persistentVolumeClaim there");
  // Every output on a volume: nothing to warn of.
  Cluster kept(JobObject(
      {{"template", kTemplate}, {"training", {{"checkpoint", {{"path", "/data/ckpt"}}}}}}));
  for (const auto& event : kept.Reconcile(At(0)).events) {
    EXPECT_NE(event.reason, kReasonOutputNotPersistent) << event.message;
  }
}

TEST(PodHardeningTest, TheTemplatesOwnSettingsWin) {
  nlohmann::json pod_template = kTemplate;
  pod_template["spec"]["automountServiceAccountToken"] = true;  // a sidecar that calls the API
  pod_template["spec"]["volumes"].push_back(
      {{"name", "big-tmp"}, {"emptyDir", {{"sizeLimit", "20Gi"}}}});
  pod_template["spec"]["containers"].push_back(nlohmann::json::parse(R"({
    "name": "autodist-runtime",
    "securityContext": {"readOnlyRootFilesystem": false},
    "volumeMounts": [{"name": "big-tmp", "mountPath": "/tmp"}]})"));
  Cluster cluster(JobObject({{"template", pod_template}}));
  cluster.Reconcile(At(0));
  const nlohmann::json& pod = cluster.pod("fmnist-worker-0");
  EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], true);
  const nlohmann::json& runtime = ContainerNamed(pod, "autodist-runtime");
  EXPECT_EQ(runtime["securityContext"]["readOnlyRootFilesystem"], false);
  EXPECT_EQ(runtime["securityContext"]["allowPrivilegeEscalation"], false);  // filled in
  EXPECT_EQ(RuntimeMounts(pod).at("/tmp")["name"], "big-tmp");
  EXPECT_TRUE(VolumeNamed(pod, "autodist-tmp").is_null());
}

}  // namespace
}  // namespace autodist::reconcile
