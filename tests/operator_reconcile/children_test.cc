// The children of a job as the reconciler builds them: names, owner references, labels, the
// runtime's args and env, resources, mounts, the ConfigMap's contents and the Service.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "operator/reconcile/members.h"
#include "operator/reconcile/names.h"
#include "operator/reconcile/options.h"
#include "reconcile_test_support.h"
#include "runtime/common/base64.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/job/job_parser.h"

namespace autodist::reconcile {
namespace {

using testing::At;
using testing::Cluster;
using testing::Created;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::JobObject;

// The env of the runtime container as name -> value.
std::map<std::string, std::string> EnvOf(const nlohmann::json& container) {
  std::map<std::string, std::string> env;
  for (const nlohmann::json& entry : container["env"]) env[entry["name"]] = entry["value"];
  return env;
}

const nlohmann::json& RuntimeOf(const nlohmann::json& pod) {
  for (const nlohmann::json& container : pod["spec"]["containers"]) {
    if (container["name"] == kRuntimeContainer) return container;
  }
  static const nlohmann::json kNone;
  ADD_FAILURE() << "no runtime container in " << pod.dump();
  return kNone;
}

TEST(ChildrenTest, EveryChildIsControlledByTheJobAndLabelled) {
  Cluster cluster(JobObject());
  const Plan plan = cluster.Reconcile(At(0));
  const nlohmann::json owner = {{"apiVersion", "autodist.io/v1alpha1"},
                                {"kind", "AutoDistJob"},
                                {"name", "fmnist"},
                                {"uid", "job-uid"},
                                {"controller", true},
                                {"blockOwnerDeletion", true}};
  ASSERT_EQ(plan.creates.size(), 7U);  // ConfigMap, Service, Secret, NetworkPolicy, 3 pods
  for (const nlohmann::json& object : plan.creates) {
    SCOPED_TRACE(object["metadata"]["name"]);
    EXPECT_EQ(object["metadata"]["namespace"], "ml");
    EXPECT_EQ(object["metadata"]["ownerReferences"], nlohmann::json::array({owner}));
    EXPECT_EQ(object["metadata"]["labels"]["autodist.io/job-name"], "fmnist");
    EXPECT_EQ(object["metadata"]["labels"]["app.kubernetes.io/managed-by"], "autodist-operator");
  }
  const nlohmann::json& ps = cluster.pod("fmnist-ps-0");
  EXPECT_EQ(ps["metadata"]["labels"]["autodist.io/replica-type"], "ps");
  EXPECT_EQ(ps["metadata"]["labels"]["autodist.io/replica-index"], "0");
  EXPECT_EQ(ps["metadata"]["labels"]["autodist.io/restart-generation"], "0");
  const nlohmann::json& worker = cluster.pod("fmnist-worker-1");
  EXPECT_EQ(worker["metadata"]["labels"]["autodist.io/replica-type"], "worker");
  EXPECT_EQ(worker["metadata"]["labels"]["autodist.io/replica-index"], "1");
}

TEST(ChildrenTest, NetworkPolicyAdmitsTheJobsPodsTheOperatorAndTheScraper) {
  ReconcilerOptions options = testing::TestOptions();
  options.network_policy.operator_namespace = "autodist-system";
  options.network_policy.operator_labels = {{"app.kubernetes.io/name", "autodist-operator"},
                                            {"app.kubernetes.io/instance", "adj"}};
  options.network_policy.scraper_namespace_labels = {{"kubernetes.io/metadata.name", "monitoring"}};
  options.network_policy.scraper_pod_labels = {{"app", "prometheus"}};
  Cluster cluster(JobObject(), options);
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(Created(plan, "NetworkPolicy"), ElementsAre("fmnist"));
  ASSERT_TRUE(cluster.network_policy().has_value());
  const nlohmann::json& policy = *cluster.network_policy();
  EXPECT_EQ(policy["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(policy["spec"], nlohmann::json::parse(R"({
    "podSelector": {"matchLabels": {"autodist.io/job-name": "fmnist"}},
    "policyTypes": ["Ingress"],
    "ingress": [
      {"from": [{"podSelector": {"matchLabels": {"autodist.io/job-name": "fmnist"}}}]},
      {"from": [{"namespaceSelector":
                   {"matchLabels": {"kubernetes.io/metadata.name": "autodist-system"}},
                 "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "adj",
                                                 "app.kubernetes.io/name": "autodist-operator"}}}],
       "ports": [{"port": "autodist", "protocol": "TCP"}]},
      {"from": [{"namespaceSelector":
                   {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                 "podSelector": {"matchLabels": {"app": "prometheus"}}}],
       "ports": [{"port": "metrics", "protocol": "TCP"}]}]})"));
  // The named ports are the runtime container's.
  std::set<std::string> ports;
  for (const nlohmann::json& port : RuntimeOf(cluster.pod("fmnist-worker-0"))["ports"]) {
    ports.insert(port["name"].get<std::string>());
  }
  EXPECT_THAT(ports, ::testing::UnorderedElementsAre("autodist", "metrics"));
  // Created once.
  EXPECT_THAT(Created(cluster.Reconcile(At(1)), "NetworkPolicy"), ::testing::IsEmpty());
}

TEST(ChildrenTest, NetworkPolicyWithoutScraperOrMetricsOrAtAll) {
  // No scraper configured: the metrics port is the job's and the operator's alone.
  Cluster plain(JobObject());
  plain.Reconcile(At(0));
  ASSERT_TRUE(plain.network_policy().has_value());
  EXPECT_EQ((*plain.network_policy())["spec"]["ingress"].size(), 2U);
  // The operator's namespace unknown (run outside the cluster): any namespace's operator pods.
  EXPECT_EQ((*plain.network_policy())["spec"]["ingress"][1]["from"][0]["namespaceSelector"],
            nlohmann::json::object());
  ReconcilerOptions no_metrics = testing::TestOptions();
  no_metrics.runtime_metrics_port = 0;
  no_metrics.network_policy.scraper_pod_labels = {{"app", "prometheus"}};
  Cluster quiet(JobObject(), no_metrics);
  quiet.Reconcile(At(0));
  EXPECT_EQ((*quiet.network_policy())["spec"]["ingress"].size(), 2U);
  ReconcilerOptions off = testing::TestOptions();
  off.network_policy.enabled = false;
  Cluster without(JobObject(), off);
  EXPECT_THAT(Created(without.Reconcile(At(0)), "NetworkPolicy"), ::testing::IsEmpty());
}

TEST(ChildrenTest, NamesDeriveFromTheJobName) {
  EXPECT_EQ(ConfigMapName("fmnist"), "fmnist-autodist");
  EXPECT_EQ(ServiceName("fmnist"), "fmnist");
  EXPECT_EQ(NetworkPolicyName("fmnist"), "fmnist");
  EXPECT_EQ(PodGroupName("fmnist"), "fmnist");
  EXPECT_EQ(PodName("fmnist", Role::kWorker, 3), "fmnist-worker-3");
  EXPECT_EQ(PodName("fmnist", Role::kParameterServer, 0), "fmnist-ps-0");
  // Every gang restart's pods have names of their own.
  EXPECT_EQ(PodName("fmnist", Role::kWorker, 3, 0), "fmnist-worker-3");
  EXPECT_EQ(PodName("fmnist", Role::kWorker, 3, 1), "fmnist-worker-3-r1");
  EXPECT_EQ(PodName("fmnist", Role::kParameterServer, 0, 12), "fmnist-ps-0-r12");
  EXPECT_EQ(NodeName(Role::kParameterServer, 2), "ps-2");
}

TEST(ChildrenTest, RuntimeArgsAndEnvOnACluster) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  const nlohmann::json& runtime = RuntimeOf(cluster.pod("fmnist-worker-1"));
  EXPECT_EQ(runtime["image"], "registry.test/autodist-runtime:1.0");
  EXPECT_EQ(runtime["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(runtime["command"], nlohmann::json::array({"autodist-runtime"}));
  EXPECT_EQ(runtime["args"],
            nlohmann::json::array(
                {"--job", "/etc/autodist/job.yaml", "--node", "worker-1", "--coordinator",
                 "fmnist-worker-0.fmnist.ml.svc:29500", "--listen", "0.0.0.0:29500",
                 "--advertise-host", "fmnist-worker-1.fmnist.ml.svc", "--tls-dir",
                 "/etc/autodist-tls/worker-1", "--metrics-bind-address", "0.0.0.0:9400"}));
  EXPECT_EQ(runtime["workingDir"], "/workspace");
  EXPECT_EQ(runtime["ports"], nlohmann::json::parse(
                                  R"([{"name": "autodist", "containerPort": 29500,
                                       "protocol": "TCP"},
                                      {"name": "metrics", "containerPort": 9400,
                                       "protocol": "TCP"}])"));
  // Scrape annotations only when asked for.
  EXPECT_FALSE(cluster.pod("fmnist-worker-1")["metadata"].contains("annotations"));
  EXPECT_EQ(EnvOf(runtime), (std::map<std::string, std::string>{
                                {"AUTODIST_ROLE", "worker"},
                                {"AUTODIST_RANK", "1"},
                                {"AUTODIST_WORLD_SIZE", "2"},
                                {"AUTODIST_NODE", "worker-1"},
                                {"AUTODIST_COORDINATOR", "fmnist-worker-0.fmnist.ml.svc:29500"},
                                {"NCCL_SOCKET_IFNAME", "eth0"},
                                {"NCCL_DEBUG", "WARN"},
                                {"NCCL_IB_DISABLE", "1"}}));
  const auto ps_env = EnvOf(RuntimeOf(cluster.pod("fmnist-ps-0")));
  EXPECT_EQ(ps_env.at("AUTODIST_ROLE"), "ps");
  EXPECT_EQ(ps_env.at("AUTODIST_RANK"), "0");

  const nlohmann::json& spec = cluster.pod("fmnist-worker-1")["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["hostname"], "fmnist-worker-1");
  EXPECT_EQ(spec["subdomain"], "fmnist");
  // The job's ConfigMap, the member's own credentials from the job's Secret (mode 0440), and
  // the scratch directories of a read-only root filesystem.
  EXPECT_EQ(spec["volumes"], nlohmann::json::parse(R"([
    {"name": "autodist-config", "configMap": {"name": "fmnist-autodist"}},
    {"name": "autodist-tls", "secret": {"secretName": "fmnist-tls", "defaultMode": 288,
      "items": [{"key": "ca.crt", "path": "ca.crt"}, {"key": "worker-1.crt", "path": "tls.crt"},
                {"key": "worker-1.key", "path": "tls.key"}]}},
    {"name": "autodist-tmp", "emptyDir": {}},
    {"name": "autodist-shm", "emptyDir": {"medium": "Memory"}}])"));
  EXPECT_EQ(runtime["volumeMounts"], nlohmann::json::parse(R"([
    {"name": "autodist-config", "mountPath": "/etc/autodist", "readOnly": true},
    {"name": "autodist-tls", "mountPath": "/etc/autodist-tls/worker-1", "readOnly": true},
    {"name": "autodist-tmp", "mountPath": "/tmp"},
    {"name": "autodist-shm", "mountPath": "/dev/shm"}])"));
  EXPECT_FALSE(spec.contains("schedulerName"));
}

TEST(ChildrenTest, RuntimeMetricsPortAndScrapeAnnotations) {
  ReconcilerOptions options = testing::TestOptions();
  options.runtime_metrics_port = 9500;
  options.runtime_scrape_annotations = true;
  nlohmann::json job = JobObject();
  // The user's own annotations stay, and win over ours.
  job["spec"]["template"] = nlohmann::json::parse(
      R"({"metadata": {"annotations": {"team": "a", "prometheus.io/path": "/custom"}}})");
  Cluster cluster(job, options);
  cluster.Reconcile(At(0));
  const nlohmann::json& pod = cluster.pod("fmnist-ps-0");
  EXPECT_EQ(pod["metadata"]["annotations"],
            nlohmann::json::parse(R"({"team": "a", "prometheus.io/scrape": "true",
                                      "prometheus.io/port": "9500",
                                      "prometheus.io/path": "/custom"})"));
  const nlohmann::json& runtime = RuntimeOf(pod);
  EXPECT_EQ(runtime["ports"][1], nlohmann::json::parse(
                                     R"({"name": "metrics", "containerPort": 9500,
                                         "protocol": "TCP"})"));
  EXPECT_THAT(runtime["args"].dump(), HasSubstr(R"("--metrics-bind-address","0.0.0.0:9500")"));

  // Port 0 turns the endpoint off: no flag, no port, no annotations.
  options.runtime_metrics_port = 0;
  Cluster off(JobObject(), options);
  off.Reconcile(At(0));
  const nlohmann::json& quiet = off.pod("fmnist-worker-0");
  EXPECT_THAT(RuntimeOf(quiet)["args"].dump(), ::testing::Not(HasSubstr("--metrics")));
  EXPECT_EQ(RuntimeOf(quiet)["ports"].size(), 1U);
  EXPECT_FALSE(quiet["metadata"].contains("annotations"));
}

TEST(ChildrenTest, RuntimeMetricsOptionsAreValidated) {
  ReconcilerOptions options = testing::TestOptions();
  options.runtime_metrics_port = 70000;
  EXPECT_THAT([&] { ValidateOptions(options); },
              ::testing::ThrowsMessage<Error>(HasSubstr("runtime metrics port")));
  options.runtime_metrics_port = options.addresses.port;
  EXPECT_THAT([&] { ValidateOptions(options); },
              ::testing::ThrowsMessage<Error>(HasSubstr("the members' own port")));
  options.runtime_metrics_port = 9400;
  EXPECT_NO_THROW(ValidateOptions(options));
}

TEST(ChildrenTest, LocalProcessesGetDistinctPortsOnLoopback) {
  ReconcilerOptions options = testing::TestOptions();
  options.addresses = AddressPolicy::LocalProcesses();
  Cluster cluster(JobObject(), options);
  cluster.Reconcile(At(0));
  const JobMembers members = ListMembers("fmnist", "ml", 2, 1, options.addresses);
  const int base = members.chief().port;
  EXPECT_GE(base, 20000);
  EXPECT_LT(base + 2, 32768);
  EXPECT_EQ((base - 20000) % 64, 0);
  EXPECT_EQ(members.members[1].port, base + 1);
  EXPECT_EQ(members.members[2].port, base + 2);
  const nlohmann::json& ps = RuntimeOf(cluster.pod("fmnist-ps-0"));
  const std::string coordinator = "127.0.0.1:" + std::to_string(base);
  EXPECT_EQ(ps["args"],
            nlohmann::json::array({"--job", "/etc/autodist/job.yaml", "--node", "ps-0",
                                   "--coordinator", coordinator, "--listen",
                                   "127.0.0.1:" + std::to_string(base + 2), "--advertise-host",
                                   "127.0.0.1", "--tls-dir", "/etc/autodist-tls/ps-0"}));
  EXPECT_EQ(EnvOf(ps).at("AUTODIST_COORDINATOR"), coordinator);
  // Deterministic: every reconcile (and every operator) derives the same ports.
  EXPECT_EQ(ListMembers("fmnist", "ml", 2, 1, options.addresses).chief().port, base);
  // Another job most likely lands elsewhere; any job lands on a slot boundary.
  EXPECT_EQ((ListMembers("other", "ml", 2, 1, options.addresses).chief().port - 20000) % 64, 0);
}

TEST(ChildrenTest, EveryGangHasPodsHostsAndSharedHostPortsOfItsOwn) {
  const AddressPolicy local = AddressPolicy::LocalProcesses();
  const JobMembers first = ListMembers("fmnist", "ml", 2, 1, local, 0);
  const JobMembers second = ListMembers("fmnist", "ml", 2, 1, local, 1);
  const int base = first.chief().port;
  // The next gang takes the next ports of the job's slot: the old one's may still be held.
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(first.members[i].port, base + static_cast<int>(i));
    EXPECT_EQ(second.members[i].port, base + 3 + static_cast<int>(i));
  }
  EXPECT_EQ(second.members[2].pod, "fmnist-ps-0-r1");
  // Round and round within the slot (64 ports): restart 21 uses 63, 0 and 1.
  const JobMembers wrapped = ListMembers("fmnist", "ml", 2, 1, local, 21);
  EXPECT_EQ(wrapped.members[0].port, base + 63);
  EXPECT_EQ(wrapped.members[1].port, base);
  EXPECT_EQ(wrapped.members[2].port, base + 1);
  // On a cluster every pod has its own address: the port stays, the DNS name moves.
  const JobMembers cluster = ListMembers("fmnist", "ml", 2, 1, AddressPolicy::Cluster(), 2);
  EXPECT_EQ(cluster.Coordinator(), "fmnist-worker-0-r2.fmnist.ml.svc:29500");
  EXPECT_EQ(cluster.members[2].Endpoint(), "fmnist-ps-0-r2.fmnist.ml.svc:29500");
}

TEST(ChildrenTest, AJobLargerThanAPortSlotIsInvalidSpec) {
  ReconcilerOptions options = testing::TestOptions();
  options.addresses = AddressPolicy::LocalProcesses();
  options.addresses.port_slot_size = 4;
  Cluster cluster(JobObject({{"resources", {{"workers", 4}, {"parameterServers", 1}}}}), options);
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_EQ(cluster.ConditionReason("Failed"), "InvalidSpec");
  EXPECT_THAT(cluster.ConditionOf("Failed")["message"].get<std::string>(),
              HasSubstr("spec.resources: the job's 5 pods need 5 ports"));
}

TEST(ChildrenTest, CustomHostTemplate) {
  AddressPolicy policy;
  policy.host_template = "{job}-{pod}.{namespace}.example";
  policy.port = 7000;
  const JobMembers members = ListMembers("j", "team", 1, 1, policy);
  EXPECT_EQ(members.Coordinator(), "j-j-worker-0.team.example:7000");
  EXPECT_EQ(members.members[1].Endpoint(), "j-j-ps-0.team.example:7000");
}

TEST(ChildrenTest, GpuWorkersRequestGpusAndParameterServersDoNot) {
  Cluster cluster(JobObject({{"strategy", {{"builder", "Parallax"}}},
                             {"resources",
                              {{"workers", 2},
                               {"gpusPerWorker", 4},
                               {"parameterServers", 1},
                               {"cpu", "4"},
                               {"memory", "16Gi"}}}}));
  cluster.Reconcile(At(0));
  EXPECT_EQ(RuntimeOf(cluster.pod("fmnist-worker-0"))["resources"],
            nlohmann::json::parse(R"({"requests": {"cpu": "4", "memory": "16Gi",
                                                   "nvidia.com/gpu": "4"},
                                      "limits": {"nvidia.com/gpu": "4"}})"));
  EXPECT_EQ(RuntimeOf(cluster.pod("fmnist-ps-0"))["resources"],
            nlohmann::json::parse(R"({"requests": {"cpu": "4", "memory": "16Gi"}})"));
  EXPECT_EQ(cluster.status()["strategy"]["replicas"], 8);
}

// GPU workers' pods run the CUDA image, tolerate GPU nodes' taint and get the manifest's /dev/shm
// size and NCCL settings (the operator's where the manifest has none); parameter servers keep
// the CPU image and no toleration.
TEST(ChildrenTest, GpuWorkersGetTheGpuImageTheTolerationSharedMemoryAndNcclSettings) {
  ReconcilerOptions options = testing::TestOptions();
  options.runtime_gpu_image = "registry.test/autodist-runtime-cuda:1.0";
  options.nccl = job::NcclSpec{"ens", "INFO", true};
  Cluster cluster(JobObject({{"strategy", {{"builder", "Parallax"}}},
                             {"resources",
                              {{"workers", 2},
                               {"gpusPerWorker", 1},
                               {"parameterServers", 1},
                               {"sharedMemory", "2Gi"},
                               {"nccl", {{"debug", "TRACE"}, {"ibDisable", false}}}}}}),
                  options);
  cluster.Reconcile(At(0));
  const nlohmann::json& worker = cluster.pod("fmnist-worker-1");
  const nlohmann::json& ps = cluster.pod("fmnist-ps-0");
  EXPECT_EQ(RuntimeOf(worker)["image"], "registry.test/autodist-runtime-cuda:1.0");
  EXPECT_EQ(RuntimeOf(ps)["image"], "registry.test/autodist-runtime:1.0");
  EXPECT_EQ(worker["spec"]["tolerations"], nlohmann::json::parse(R"([
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])"));
  EXPECT_FALSE(ps["spec"].contains("tolerations"));
  for (const nlohmann::json* pod : {&worker, &ps}) {
    const auto env = EnvOf(RuntimeOf(*pod));
    EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "ens");  // the operator's
    EXPECT_EQ(env.at("NCCL_DEBUG"), "TRACE");        // the manifest's
    EXPECT_EQ(env.at("NCCL_IB_DISABLE"), "0");
    const nlohmann::json& volumes = (*pod)["spec"]["volumes"];
    const auto shm = std::find_if(volumes.begin(), volumes.end(), [](const nlohmann::json& v) {
      return v["name"] == "autodist-shm";
    });
    ASSERT_NE(shm, volumes.end());
    EXPECT_EQ((*shm)["emptyDir"],
              nlohmann::json::parse(R"({"medium": "Memory", "sizeLimit": "2Gi"})"));
  }
}

// A template that tolerates the GPU taint its own way keeps its toleration, not a second one.
TEST(ChildrenTest, ATemplatesOwnGpuTolerationIsKept) {
  Cluster cluster(JobObject({{"resources", {{"workers", 1}, {"gpusPerWorker", 1}}},
                             {"template",
                              {{"spec",
                                {{"tolerations",
                                  {{{"key", "nvidia.com/gpu"},
                                    {"operator", "Equal"},
                                    {"value", "a100"},
                                    {"effect", "NoSchedule"}},
                                   {{"key", "spot"}, {"operator", "Exists"}}}}}}}}}));
  cluster.Reconcile(At(0));
  EXPECT_EQ(cluster.pod("fmnist-worker-0")["spec"]["tolerations"], nlohmann::json::parse(R"([
    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Exists"}])"));
}

TEST(ChildrenTest, WithoutResourcesThereAreNoRequests) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  EXPECT_FALSE(RuntimeOf(cluster.pod("fmnist-worker-0")).contains("resources"));
}

TEST(ChildrenTest, ConfigMapHoldsManifestStrategyResourceSpecAndSummary) {
  Cluster cluster(JobObject({{"training", {{"checkpoint", {{"path", "ckpt/"}}}}}}));
  cluster.Reconcile(At(0));
  ASSERT_TRUE(cluster.config_map().has_value());
  const nlohmann::json& data = (*cluster.config_map())["data"];
  std::vector<std::string> keys;
  for (const auto& [key, value] : data.items()) keys.push_back(key);
  // Nothing that depends on the gang: every restart's pods read the same ConfigMap.
  EXPECT_THAT(keys, ElementsAre("job.yaml", "resource_spec.yml", "strategy.pbtxt", "summary.txt"));
  // The manifest the runtime reads parses to the job the operator parsed, its relative paths
  // resolved against the runtime container's working directory.
  const job::JobSpec manifest = job::ParseJob(data["job.yaml"], "job.yaml", "");
  EXPECT_EQ(manifest.metadata.name, "fmnist");
  EXPECT_EQ(manifest.metadata.uid, "job-uid");
  EXPECT_EQ(manifest.model.path, testing::kModelPath);
  EXPECT_EQ(manifest.training.checkpoint->path, "/workspace/ckpt/");
  EXPECT_EQ(manifest.resources.workers, 2);
  EXPECT_THAT(data["job.yaml"].get<std::string>(), ::testing::Not(HasSubstr("resourceVersion")));
  EXPECT_THAT(data["strategy.pbtxt"].get<std::string>(), HasSubstr("node_config"));
  EXPECT_THAT(data["resource_spec.yml"].get<std::string>(), HasSubstr("worker-0"));
  EXPECT_THAT(data["summary.txt"].get<std::string>(), HasSubstr("builder: PSLoadBalancing"));
}

TEST(ChildrenTest, AModelConfigMapIsMountedAndTheManifestPointsAtIt) {
  Cluster cluster(JobObject(
      {{"model", {{"path", nullptr}, {"configMap", {{"name", "mlp"}, {"key", "m.onnx"}}}}}}));
  cluster.models().AddConfigMap(
      "ml/mlp",
      {{"binaryData", {{"m.onnx", EncodeBase64(ReadFileBytes(testing::kModelPath, "model"))}}}});
  cluster.Reconcile(At(0));
  const nlohmann::json& pod = cluster.pod("fmnist-worker-0");
  EXPECT_EQ(pod["spec"]["volumes"][1], nlohmann::json::parse(R"({"name": "autodist-model",
                                      "configMap": {"name": "mlp",
                                                    "items": [{"key": "m.onnx",
                                                               "path": "m.onnx"}]}})"));
  EXPECT_EQ(RuntimeOf(pod)["volumeMounts"][1], nlohmann::json::parse(R"({"name": "autodist-model",
                                      "mountPath": "/etc/autodist-model", "readOnly": true})"));
  const job::JobSpec manifest =
      job::ParseJob((*cluster.config_map())["data"]["job.yaml"], "job.yaml", "");
  EXPECT_EQ(manifest.model.path, "/etc/autodist-model/m.onnx");
  EXPECT_FALSE(manifest.model.config_map.has_value());
}

TEST(ChildrenTest, HeadlessServicePublishesNotReadyPods) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  ASSERT_TRUE(cluster.service().has_value());
  EXPECT_EQ((*cluster.service())["spec"], nlohmann::json::parse(R"({
    "clusterIP": "None",
    "publishNotReadyAddresses": true,
    "selector": {"autodist.io/job-name": "fmnist"},
    "ports": [{"name": "autodist", "port": 29500, "targetPort": 29500, "protocol": "TCP"}]})"));
}

TEST(ChildrenTest, RestartedPodsResumeFromTheCheckpointEvenWithResumeOff) {
  Cluster cluster(
      JobObject({{"training", {{"checkpoint", {{"path", "/ckpt"}, {"resume", false}}}}}}));
  cluster.Reconcile(At(0));
  const nlohmann::json& data = (*cluster.config_map())["data"];
  // One manifest: the pods that continue say so with a flag, not with a second copy.
  EXPECT_FALSE(data.contains("job-restart.yaml"));
  EXPECT_FALSE(job::ParseJob(data["job.yaml"], "job.yaml", "").training.checkpoint->resume);
  const nlohmann::json first_args = RuntimeOf(cluster.pod("fmnist-worker-0"))["args"];
  EXPECT_EQ(first_args[1], "/etc/autodist/job.yaml");
  EXPECT_EQ(std::count(first_args.begin(), first_args.end(), "--resume"), 0);

  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(1));
  cluster.Exit("fmnist-ps-0", 137, "OOMKilled");
  cluster.Reconcile(At(2));  // gang restart: every pod deleted
  ASSERT_TRUE(cluster.pods().empty());
  cluster.Reconcile(At(3));  // the pods of restart 1
  const nlohmann::json& pod = cluster.pod("fmnist-worker-0-r1");
  EXPECT_EQ(pod["metadata"]["labels"]["autodist.io/restart-generation"], "1");
  const nlohmann::json args = RuntimeOf(pod)["args"];
  EXPECT_EQ(args[1], "/etc/autodist/job.yaml");
  EXPECT_EQ(std::count(args.begin(), args.end(), "--resume"), 1) << args.dump();
}

TEST(ChildrenTest, WithResumeOnRestartedPodsReadTheSameManifest) {
  Cluster cluster(JobObject({{"training", {{"checkpoint", {{"path", "/ckpt"}}}}}}));
  cluster.Reconcile(At(0));
  EXPECT_FALSE((*cluster.config_map())["data"].contains("job-restart.yaml"));
  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(1));
  cluster.Exit("fmnist-worker-1", 143);
  cluster.Reconcile(At(2));
  cluster.Reconcile(At(3));
  const nlohmann::json args = RuntimeOf(cluster.pod("fmnist-worker-1-r1"))["args"];
  EXPECT_EQ(args[1], "/etc/autodist/job.yaml");
  EXPECT_EQ(std::count(args.begin(), args.end(), "--resume"), 0) << args.dump();  // not needed
}

}  // namespace
}  // namespace autodist::reconcile
