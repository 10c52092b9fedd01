// What a real API server does to a job's children, end to end: a pod refused for good (a Pod
// Security violation, as a namespace labelled restricted answers) fails the job FailedCreate with
// the server's message, once, instead of being retried in silence; a used-up quota keeps the job
// Pending with the reason until it admits the pods, and the job then succeeds. Children of a
// deleted job of the same name that the (asynchronous) garbage collector has not removed yet are
// waited for and never used; a name held by someone else's object fails the job.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "runtime/job/job_parser.h"
#include "tests/operator_e2e/e2e_fixture.h"

namespace autodist::app::e2e {
namespace {

using std::chrono::seconds;

long PodCreates(k8s::TestApiServer& server) {
  const nlohmann::json requests = server.faults().Stats().at("requests");
  const nlohmann::json::json_pointer path("/create/pods");
  return requests.contains(path) ? requests.at(path).get<long>() : 0;
}

TEST_F(OperatorEndToEnd, APodRefusedForGoodFailsTheJobWithTheServersMessage) {
  const std::string name = "fmnist-refused";
  const std::string refusal = "pods \"" + name +
                              "-worker-0\" is forbidden: violates PodSecurity "
                              "\"restricted:latest\": runAsNonRoot != true";
  server_->faults().Configure({{"failures",
                                {{{"verb", "create"},
                                  {"resource", "pods"},
                                  {"code", 403},
                                  {"count", 1000},
                                  {"message", refusal}}}}});
  JobManifest manifest;
  manifest.name = name;
  const std::shared_ptr<PodEvents> events = RecordPods(name);
  Apply(manifest.ToYaml());

  ASSERT_TRUE(WaitForCondition(name, "Failed", seconds(60)));
  const nlohmann::json job = Job(name);
  const nlohmann::json failed = ConditionOf(job, "Failed");
  ASSERT_EQ(failed.value("reason", ""), "FailedCreate") << Dump(name);
  EXPECT_TRUE(Contains(failed.value("message", ""), "the API server refused to create Pod " + name +
                                                        "-worker-0 (403 "
                                                        "Forbidden): " +
                                                        refusal))
      << failed.dump(2);
  bool announced = false;
  for (const auto& [reason, message] : KubectlEvents(name)) {
    announced = announced || (reason == "FailedCreate" && Contains(message, refusal));
  }
  EXPECT_TRUE(announced) << Dump(name);

  // Not retried: the refusal is the job's end, so the pod creates stop once it is Failed.
  const long creates = PodCreates(*server_);
  EXPECT_GE(creates, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(PodCreates(*server_), creates);
  EXPECT_TRUE(events->summary().added.empty());
  EXPECT_TRUE(WaitForCount(
      name, "jobs_failed", [&] { return metrics_->jobs_failed.With({"default"}).Value(); }, 1));
}

TEST_F(OperatorEndToEnd, AUsedUpQuotaKeepsTheJobPendingUntilItAdmitsThePods) {
  const std::string name = "fmnist-quota";
  server_->faults().Configure(
      {{"failures",
        {{{"verb", "create"},
          {"resource", "pods"},
          {"code", 403},
          {"count", 3},
          {"message", "pods \"" + name +
                          "-worker-0\" is forbidden: exceeded quota: team, requested: pods=1, "
                          "used: pods=10, limited: pods=10"}}}}});
  JobManifest manifest;
  manifest.name = name;
  Apply(manifest.ToYaml());

  ASSERT_TRUE(WaitForCondition(name, "Succeeded"));
  const nlohmann::json job = Job(name);
  EXPECT_TRUE(ConditionOf(job, "Failed").is_null()) << job.dump(2);
  // Said while it waited, once for the same refusal.
  int pending = 0;
  for (const nlohmann::json& event : Events(name)) {
    if (event.value("reason", "") != "FailedCreate") continue;
    ++pending;
    EXPECT_EQ(event.value("type", ""), "Warning");
    EXPECT_TRUE(Contains(event.value("message", ""), "exceeded quota: team")) << event.dump(2);
    EXPECT_TRUE(Contains(event.value("message", ""), "trying again until it is admitted"));
  }
  EXPECT_EQ(pending, 1) << Dump(name);
  EXPECT_TRUE(server_->faults().State().value("failures", nlohmann::json::array()).empty());
  EXPECT_TRUE(WaitForMembersSucceeded(name));
}

TEST_F(OperatorEndToEnd, ARecreatedJobWaitsForTheOldChildrenAndNeverUsesThem) {
  const std::string name = "fmnist-recreate";
  JobManifest first;
  first.name = name;
  first.steps = 5000;  // still running when it is deleted
  Apply(first.ToYaml());
  ASSERT_TRUE(WaitForCondition(name, "Running"));
  std::set<std::string> old_uids;
  for (const nlohmann::json& pod : Pods(name)) old_uids.insert(pod["metadata"].value("uid", ""));
  ASSERT_EQ(old_uids.size(), 3u);

  // The garbage collector falls behind: the deleted job's children keep their names.
  server_->store().HoldGarbageCollection(true);
  const CommandResult deleted = Kubectl("delete adj " + name);
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  ASSERT_EQ(CountObjects("configmaps", name), 1u);
  JobManifest second;
  second.name = name;
  second.workers = 1;  // another gang: its manifest differs from the old one's
  Apply(second.ToYaml());
  // It waits on each old child in turn, the ConfigMap first: no pod of it ever starts beside the
  // old ConfigMap. The old ones go one by one, as a slow collector would remove them.
  const auto waits_on = [&](const std::string& child) {
    return WaitFor(name, "the new job to wait for the old " + child, seconds(60), [&] {
      const nlohmann::json running = ConditionOf(Job(name), "Running");
      return running.is_object() && running.value("reason", "") == "FailedCreate" &&
             Contains(running.value("message", ""), child + " already exists") &&
             Contains(running.value("message", ""), "an earlier job of this name");
    });
  };
  ASSERT_TRUE(waits_on("ConfigMap " + name + "-autodist"));
  for (const nlohmann::json& pod : Pods(name)) {
    EXPECT_EQ(old_uids.count(pod["metadata"].value("uid", "")), 1u)
        << "a pod of the new job started beside the old ConfigMap: " << pod.dump(2);
  }
  EXPECT_TRUE(ConditionOf(Job(name), "Failed").is_null());
  ASSERT_EQ(Kubectl("delete configmap " + name + "-autodist").exit_code, 0);
  ASSERT_TRUE(waits_on("Service " + name));
  ASSERT_EQ(Kubectl("delete service " + name).exit_code, 0);
  // The old job's keys are never the new job's: its own CA comes only once the name is free.
  ASSERT_TRUE(waits_on("Secret " + name + "-tls"));
  ASSERT_EQ(Kubectl("delete secret " + name + "-tls").exit_code, 0);
  ASSERT_TRUE(waits_on("Pod " + name + "-worker-0"));
  const std::string uid = Job(name)["metadata"].value("uid", "");

  // Collected: the new job makes its own pods and runs on its own children.
  server_->store().HoldGarbageCollection(false);
  ASSERT_TRUE(WaitForCondition(name, "Succeeded"));
  const std::vector<nlohmann::json> config_maps = Objects("configmaps", name);
  ASSERT_EQ(config_maps.size(), 1u);
  const nlohmann::json& config_map = config_maps[0];
  EXPECT_EQ(config_map["metadata"]["ownerReferences"][0].value("uid", ""), uid);
  EXPECT_EQ(
      job::ParseJob(config_map["data"].value("job.yaml", ""), "job.yaml", "").resources.workers, 1)
      << config_map.dump(2);
  for (const nlohmann::json& pod : Pods(name)) {
    EXPECT_EQ(old_uids.count(pod["metadata"].value("uid", "")), 0u) << pod.dump(2);
  }
}

TEST_F(OperatorEndToEnd, ANameHeldBySomeoneElsesObjectFailsTheJob) {
  const std::string name = "fmnist-squatted";
  const CommandResult made =
      Kubectl("create configmap " + name + "-autodist --from-literal=note=not-the-operators");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  JobManifest manifest;
  manifest.name = name;
  manifest.ttl_seconds_after_finished = 1;
  const std::shared_ptr<PodEvents> events = RecordPods(name);
  Apply(manifest.ToYaml());

  ASSERT_TRUE(WaitForCondition(name, "Failed", seconds(60)));
  const nlohmann::json failed = ConditionOf(Job(name), "Failed");
  EXPECT_EQ(failed.value("reason", ""), "FailedCreate");
  EXPECT_TRUE(
      Contains(failed.value("message", ""), "ConfigMap " + name +
                                                "-autodist already exists and has no controller, "
                                                "not by this job"))
      << failed.dump(2);
  EXPECT_TRUE(events->summary().added.empty());
  // A failed job is deleted ttlSecondsAfterFinished after it finished, as a succeeded one.
  EXPECT_TRUE(
      WaitFor(name, "the TTL to delete the job", seconds(30), [&] { return Job(name).is_null(); }));
}

TEST_F(OperatorEndToEnd, ARefusalThatRecursIsOneEventCounted) {
  const std::string name = "fmnist-recurring";
  const nlohmann::json refusal = {
      {"failures",
       {{{"verb", "create"},
         {"resource", "pods"},
         {"code", 403},
         {"count", 1},  // the gang's first pod: worker-0
         {"message", "pods \"" + name +
                         "-worker-0\" is forbidden: exceeded quota: team, requested: pods=1, "
                         "used: pods=10, limited: pods=10"}}}}};
  server_->faults().Configure(refusal);
  JobManifest manifest;
  manifest.name = name;
  // Nothing schedules the pods: the gang never runs, so a pod deleted is made again in it.
  manifest.scheduler_name = "no-such-scheduler";
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitFor(name, "the refused pods to be admitted", seconds(60),
                      [&] { return Pods(name).size() == 3; }));

  // The quota is used up again, and worker-0 is deleted: its re-creation is refused alike, the
  // same refusal said again.
  server_->faults().Configure(refusal);
  ASSERT_EQ(Kubectl("delete pod " + name + "-worker-0").exit_code, 0);
  std::vector<nlohmann::json> refused;
  ASSERT_TRUE(WaitFor(name, "the refusal's Event to be counted twice", seconds(60), [&] {
    refused.clear();
    for (const nlohmann::json& event : Events(name)) {
      if (event.value("reason", "") == "FailedCreate") refused.push_back(event);
    }
    return refused.size() == 1 && refused[0].value("count", 0) == 2;
  }));
  EXPECT_NE(refused[0].value("firstTimestamp", ""), "");
  EXPECT_TRUE(Contains(refused[0].value("message", ""), "create Pod " + name + "-worker-0 (403"))
      << refused[0].dump(2);
  int listed = 0;  // as kubectl lists them: one line
  for (const auto& [reason, message] : KubectlEvents(name)) listed += reason == "FailedCreate";
  EXPECT_EQ(listed, 1) << Dump(name);
  ASSERT_TRUE(WaitFor(name, "the pod to be admitted again", seconds(60),
                      [&] { return Pods(name).size() == 3; }));
  ASSERT_EQ(Kubectl("delete adj " + name).exit_code, 0);
}

TEST_F(OperatorEndToEnd, TheOperatorsPodsPassPodSecurityRestricted) {
  const CommandResult labelled =
      Kubectl("label namespace default pod-security.kubernetes.io/enforce=restricted");
  ASSERT_EQ(labelled.exit_code, 0) << labelled.output;
  const std::string name = "fmnist-restricted";
  JobManifest manifest;
  manifest.name = name;
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitForCondition(name, "Succeeded"));
  for (const nlohmann::json& pod : Pods(name)) {
    const nlohmann::json& security = pod["spec"]["securityContext"];
    EXPECT_EQ(security.value("runAsNonRoot", false), true) << pod.dump(2);
    EXPECT_EQ(security["seccompProfile"].value("type", ""), "RuntimeDefault");
    // Beyond the standard: no token, a read-only root (the job wrote only to its volumes).
    EXPECT_EQ(pod["spec"].value("automountServiceAccountToken", true), false) << pod.dump(2);
    for (const nlohmann::json& container : pod["spec"]["containers"]) {
      EXPECT_EQ(container["securityContext"].value("readOnlyRootFilesystem", false), true);
    }
  }

  // A template that asks for the host's network is refused by the namespace's level, and the
  // job says so with the admission plugin's words.
  const std::string refused = "fmnist-host-network";
  JobManifest host;
  host.name = refused;
  host.template_spec = {"hostNetwork: true"};
  Apply(host.ToYaml());
  ASSERT_TRUE(WaitForCondition(refused, "Failed", seconds(60)));
  const nlohmann::json failed = ConditionOf(Job(refused), "Failed");
  EXPECT_EQ(failed.value("reason", ""), "FailedCreate");
  EXPECT_TRUE(Contains(failed.value("message", ""),
                       "is forbidden: violates PodSecurity \"restricted:latest\": host "
                       "namespaces (hostNetwork=true)"))
      << failed.dump(2);
}

TEST_F(OperatorEndToEnd, PodsNoSchedulerServesAreReportedAfterTheSchedulingTimeout) {
  RestartOperatorWith(
      [](OperatorOptions& options) { options.reconciler.scheduling_timeout = seconds(1); });
  const std::string name = "fmnist-unscheduled";
  JobManifest manifest;
  manifest.name = name;
  manifest.scheduler_name = "no-such-scheduler";  // the double's cluster runs default-scheduler
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitFor(name, "the job to say its pods are not scheduled", seconds(60), [&] {
    const nlohmann::json running = ConditionOf(Job(name), "Running");
    return running.is_object() && running.value("reason", "") == "Unschedulable";
  }));
  const nlohmann::json running = ConditionOf(Job(name), "Running");
  EXPECT_EQ(running.value("status", ""), "False");
  EXPECT_TRUE(
      Contains(running.value("message", ""), "its scheduler 'no-such-scheduler' never acted on it"))
      << running.dump(2);
  for (const nlohmann::json& pod : Pods(name)) {
    EXPECT_EQ(pod["status"].value("phase", ""), "Pending") << pod.dump(2);
    EXPECT_FALSE(pod["spec"].contains("nodeName")) << pod.dump(2);
  }
  // The Event follows the status write.
  EXPECT_TRUE(WaitFor(name, "the Unschedulable Event", seconds(10), [&] {
    for (const nlohmann::json& event : Events(name)) {
      if (event.value("reason", "") == "Unschedulable" && event.value("type", "") == "Warning") {
        return true;
      }
    }
    return false;
  }));
  EXPECT_TRUE(ConditionOf(Job(name), "Failed").is_null());
}

// A GPU job's pods as the API server stores them (left unscheduled: no GPU runs here): workers
// with the GPU image, the device request, the GPU taint's toleration, the manifest's /dev/shm
// size and NCCL settings over the operator's; the parameter server on the CPU image.
TEST_F(OperatorEndToEnd, GpuWorkerPodsCarryTheGpuImageTolerationSharedMemoryAndNccl) {
  RestartOperatorWith([](OperatorOptions& options) {
    options.reconciler.runtime_gpu_image = "autodist/autodist-runtime-cuda:e2e";
    options.reconciler.nccl.socket_ifname = "lo";
  });
  const std::string name = "fmnist-gpu-pods";
  JobManifest manifest;
  manifest.name = name;
  manifest.scheduler_name = "no-such-scheduler";  // the pods stay Pending, as rendered
  manifest.resources = {"gpusPerWorker: 1", "sharedMemory: 1Gi",
                        "nccl: {debug: INFO, ibDisable: false}"};
  Apply(manifest.ToYaml());
  ASSERT_TRUE(
      WaitFor(name, "the job's three pods", seconds(60), [&] { return Pods(name).size() == 3; }));
  for (const nlohmann::json& pod : Pods(name)) {
    const std::string pod_name = pod["metadata"].value("name", "");
    const bool worker = pod_name.find("-worker-") != std::string::npos;
    const nlohmann::json& spec = pod["spec"];
    const nlohmann::json* runtime = nullptr;
    for (const nlohmann::json& container : spec["containers"]) {
      if (container.value("name", "") == "autodist-runtime") runtime = &container;
    }
    ASSERT_NE(runtime, nullptr) << pod.dump(2);
    EXPECT_EQ(runtime->value("image", ""),
              worker ? "autodist/autodist-runtime-cuda:e2e" : "autodist/autodist-runtime:e2e")
        << pod_name;
    std::map<std::string, std::string> env;
    for (const nlohmann::json& variable : (*runtime)["env"]) {
      env[variable.value("name", "")] = variable.value("value", "");
    }
    EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "lo") << pod_name;
    EXPECT_EQ(env["NCCL_DEBUG"], "INFO") << pod_name;
    EXPECT_EQ(env["NCCL_IB_DISABLE"], "0") << pod_name;
    bool shm_sized = false;
    for (const nlohmann::json& volume : spec["volumes"]) {
      if (volume.value("name", "") == "autodist-shm") {
        shm_sized = volume["emptyDir"].value("sizeLimit", "") == "1Gi" &&
                    volume["emptyDir"].value("medium", "") == "Memory";
      }
    }
    EXPECT_TRUE(shm_sized) << pod.dump(2);
    if (worker) {
      EXPECT_EQ((*runtime)["resources"]["limits"].value("nvidia.com/gpu", ""), "1") << pod_name;
      EXPECT_EQ(spec["tolerations"], nlohmann::json::parse(R"([
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])"))
          << pod_name;
    } else {
      EXPECT_FALSE((*runtime).contains("resources")) << pod_name;
      EXPECT_FALSE(spec.contains("tolerations")) << pod_name;
    }
  }
  ASSERT_EQ(Kubectl("delete adj " + name).exit_code, 0);
}

TEST_F(OperatorEndToEnd, TheVolcanoPathRunsAGangEndToEnd) {
  server_->CreateFromFile(k8s::VolcanoPodGroupCrdPath());
  RestartOperatorWith([](OperatorOptions& options) {
    options.reconciler.gang_scheduler = reconcile::GangScheduler::kVolcano;
  });
  const std::string name = "fmnist-volcano";
  JobManifest manifest;
  manifest.name = name;
  manifest.steps = 200;
  manifest.scheduling_policy = {"schedulerName: volcano", "queue: research"};
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitForCondition(name, "Running"));
  // The PodGroup holds the whole gang, in the job's queue; each pod joined it and runs under
  // Volcano, which (the node agent playing it) bound none before all three existed.
  k8s::Store& store = server_->store();
  const auto pod_groups = store.FindResource("scheduling.volcano.sh", "v1beta1", "podgroups");
  ASSERT_NE(pod_groups, nullptr);
  const k8s::ObjectPtr group = store.Get(*pod_groups, "default", name);
  ASSERT_NE(group, nullptr) << Dump(name);
  EXPECT_EQ(group->object["spec"].value("minMember", 0), 3) << group->object.dump(2);
  EXPECT_EQ(group->object["spec"].value("queue", ""), "research") << group->object.dump(2);
  for (const nlohmann::json& pod : Pods(name)) {
    EXPECT_EQ(pod["spec"].value("schedulerName", ""), "volcano") << pod.dump(2);
    EXPECT_EQ(pod["metadata"]["annotations"].value("scheduling.k8s.io/group-name", ""), name)
        << pod.dump(2);
    EXPECT_EQ(pod["spec"].value("nodeName", ""), "fake-node") << pod.dump(2);
  }
  ASSERT_TRUE(WaitForCondition(name, "Succeeded"));
  // The PodGroup goes when the job finishes (the Service and ConfigMap stay with the job).
  EXPECT_TRUE(WaitFor(name, "the PodGroup to be deleted", seconds(30),
                      [&] { return store.Get(*pod_groups, "default", name) == nullptr; }));
}

TEST_F(OperatorEndToEnd, AJobWaitsSayingSoUntilItsGangSchedulersCrdIsInstalled) {
  RestartOperatorWith([](OperatorOptions& options) {
    options.reconciler.gang_scheduler = reconcile::GangScheduler::kVolcano;
  });
  const std::string name = "fmnist-volcano-later";
  JobManifest manifest;
  manifest.name = name;
  manifest.scheduling_policy = {"schedulerName: volcano"};
  Apply(manifest.ToYaml());
  // Volcano's CRD is not installed: the PodGroup's create is answered 404, and the job says so
  // instead of retrying in silence; no pod starts without its gang's PodGroup.
  ASSERT_TRUE(WaitFor(name, "the job to say its PodGroup is refused", seconds(60), [&] {
    const nlohmann::json running = ConditionOf(Job(name), "Running");
    return running.is_object() && running.value("reason", "") == "FailedCreate";
  }));
  const std::string message = ConditionOf(Job(name), "Running").value("message", "");
  EXPECT_TRUE(Contains(message, "PodGroup " + name)) << message;
  EXPECT_TRUE(Contains(message, "serves no scheduling.volcano.sh/v1beta1 PodGroups")) << message;
  EXPECT_TRUE(Pods(name).empty()) << Dump(name);
  EXPECT_TRUE(ConditionOf(Job(name), "Failed").is_null());
  // Installed: the next attempt goes through, and the job runs to the end.
  server_->CreateFromFile(k8s::VolcanoPodGroupCrdPath());
  ASSERT_TRUE(WaitForCondition(name, "Succeeded", seconds(180)));
}

TEST_F(OperatorEndToEnd, AResourceQuotaTheGangDoesNotFitKeepsItWaitingUntilItDoes) {
  // A real quota, evaluated by the double as the API server's admission plugin does: two pods in
  // the namespace, and the gang has three.
  Apply(
      "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: team\nspec:\n  hard:\n"
      "    pods: \"2\"\n");
  const std::string name = "fmnist-quota";
  JobManifest manifest;
  manifest.name = name;
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitFor(name, "the job to say the quota refuses a pod", seconds(60), [&] {
    const nlohmann::json running = ConditionOf(Job(name), "Running");
    return running.is_object() && running.value("reason", "") == "FailedCreate";
  }));
  const std::string message = ConditionOf(Job(name), "Running").value("message", "");
  EXPECT_TRUE(Contains(message,
                       "is forbidden: exceeded quota: team, requested: pods=1, used: "
                       "pods=2, limited: pods=2"))
      << message;
  EXPECT_TRUE(ConditionOf(Job(name), "Failed").is_null());
  // The quota is raised: the job is admitted on a later attempt and runs to the end.
  const CommandResult raised =
      Kubectl("patch quota team --type=merge -p '{\"spec\":{\"hard\":{\"pods\":\"10\"}}}'");
  ASSERT_EQ(raised.exit_code, 0) << raised.output;
  ASSERT_TRUE(WaitForCondition(name, "Succeeded", seconds(180)));
}

}  // namespace
}  // namespace autodist::app::e2e
