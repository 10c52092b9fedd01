#include "operator/reconcile/pod.h"

#include <fmt/format.h>

#include <string>

#include "operator/reconcile/config_map.h"
#include "operator/reconcile/names.h"
#include "operator/reconcile/object_meta.h"
#include "operator/reconcile/pod_group.h"
#include "operator/reconcile/pod_template.h"
#include "operator/reconcile/pod_volumes.h"
#include "operator/reconcile/tls_secret.h"

namespace autodist::reconcile {
namespace {

constexpr const char* kGpuResource = "nvidia.com/gpu";

nlohmann::json Env(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

// A worker of a job that asks for GPUs: its pod gets the devices, the CUDA image and the
// toleration of GPU nodes' taint.
bool IsGpuWorker(const job::JobSpec& job, const Member& member) {
  return member.role == Role::kWorker && job.resources.gpus_per_worker > 0;
}

// Lets a GPU worker's pod onto nodes tainted nvidia.com/gpu (as GPU node pools commonly are, so
// that only pods that use the devices land there), unless the template already tolerates it.
void TolerateGpuNodes(nlohmann::json& pod_spec) {
  nlohmann::json& tolerations = pod_spec["tolerations"];
  if (!tolerations.is_array()) tolerations = nlohmann::json::array();
  for (const nlohmann::json& toleration : tolerations) {
    if (toleration.is_object() && toleration.value("key", "") == kGpuResource) return;
  }
  tolerations.push_back({{"key", kGpuResource}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
}

nlohmann::json Resources(const job::JobSpec& job, const Member& member) {
  nlohmann::json requests = nlohmann::json::object();
  nlohmann::json limits = nlohmann::json::object();
  if (!job.resources.cpu.empty()) requests["cpu"] = job.resources.cpu;
  if (!job.resources.memory.empty()) requests["memory"] = job.resources.memory;
  // GPUs are extended resources: the limit is what the device plugin allocates, and a request,
  // when given, must equal it. Parameter servers run no replica and get none.
  if (IsGpuWorker(job, member)) {
    const std::string gpus = std::to_string(job.resources.gpus_per_worker);
    requests[kGpuResource] = gpus;
    limits[kGpuResource] = gpus;
  }
  nlohmann::json resources = nlohmann::json::object();
  if (!requests.empty()) resources["requests"] = std::move(requests);
  if (!limits.empty()) resources["limits"] = std::move(limits);
  return resources;
}

nlohmann::json Volumes(const PodRequest& request) {
  nlohmann::json volumes = nlohmann::json::array(
      {{{"name", kConfigVolume}, {"configMap", {{"name", ConfigMapName(request.ref.name)}}}}});
  if (const auto& model = request.job.model.config_map) {
    volumes.push_back(
        {{"name", kModelVolume},
         {"configMap",
          {{"name", model->name},
           {"items", nlohmann::json::array({{{"key", model->key}, {"path", model->key}}})}}}});
  }
  if (request.options.tls.enabled) volumes.push_back(TlsVolume(request.ref, request.member));
  return volumes;
}

nlohmann::json VolumeMounts(const PodRequest& request) {
  nlohmann::json mounts = nlohmann::json::array({{{"name", kConfigVolume},
                                                  {"mountPath", request.options.config_mount_path},
                                                  {"readOnly", true}}});
  if (request.job.model.config_map.has_value()) {
    mounts.push_back({{"name", kModelVolume},
                      {"mountPath", request.options.model_mount_path},
                      {"readOnly", true}});
  }
  if (request.options.tls.enabled) {
    mounts.push_back({{"name", kTlsVolume},
                      {"mountPath", TlsMountPath(request.options.tls, request.member)},
                      {"readOnly", true}});
  }
  return mounts;
}

nlohmann::json TemplatePart(const nlohmann::json& pod_template, const char* part) {
  if (!pod_template.is_object()) return {};
  const auto found = pod_template.find(part);
  return found != pod_template.end() && found->is_object() ? *found : nlohmann::json();
}

}  // namespace

nlohmann::json RuntimeContainer(const PodRequest& request) {
  const Member& member = request.member;
  const ReconcilerOptions& options = request.options;
  const std::string manifest = options.config_mount_path + "/" + kManifestKey;
  nlohmann::json env = nlohmann::json::array({
      Env("AUTODIST_ROLE", RoleLabel(member.role)),
      Env("AUTODIST_RANK", std::to_string(member.index)),
      Env("AUTODIST_WORLD_SIZE", std::to_string(request.members.workers)),
      Env("AUTODIST_NODE", member.node),
      Env("AUTODIST_COORDINATOR", request.members.Coordinator()),
  });
  for (const auto& [name, value] : job::NcclEnvironment(request.job.resources.nccl, options.nccl)) {
    env.push_back(Env(name, value));
  }
  nlohmann::json container = {
      {"name", kRuntimeContainer},
      {"image",
       IsGpuWorker(request.job, member) ? options.runtime_gpu_image : options.runtime_image},
      {"imagePullPolicy", options.runtime_image_pull_policy},
      {"command", nlohmann::json::array({"autodist-runtime"})},
      {"args",
       nlohmann::json::array({"--job", manifest, "--node", member.node, "--coordinator",
                              request.members.Coordinator(), "--listen",
                              fmt::format("{}:{}", options.addresses.listen_host, member.port),
                              "--advertise-host", member.host})},
      {"env", std::move(env)},
      {"ports", nlohmann::json::array(
                    {{{"name", kPortName}, {"containerPort", member.port}, {"protocol", "TCP"}}})},
      {"volumeMounts", VolumeMounts(request)},
      // A failed runtime's last log lines become its terminated state's message, which the
      // MemberFailed Event quotes (the runtime's error line is its last).
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
      // The Pod Security Standards' restricted level, with the pod's own securityContext
      // (BuildPod): the runtime needs no privilege, capability or escalation.
      // Its root filesystem read-only too: it writes only in the volumes AddWritableVolumes gives
      // it.
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"readOnlyRootFilesystem", true},
        {"capabilities", {{"drop", {"ALL"}}}}}},
  };
  if (ForcesResume(request.job, request.continuing)) container["args"].push_back("--resume");
  if (options.tls.enabled) {
    container["args"].push_back("--tls-dir");
    container["args"].push_back(TlsMountPath(options.tls, member));
  } else {
    container["args"].push_back("--insecure");
  }
  if (const int metrics_port = RuntimeMetricsPort(options); metrics_port > 0) {
    container["args"].push_back("--metrics-bind-address");
    container["args"].push_back(fmt::format("{}:{}", options.addresses.listen_host, metrics_port));
    container["ports"].push_back(
        {{"name", kMetricsPortName}, {"containerPort", metrics_port}, {"protocol", "TCP"}});
  }
  if (!options.working_dir.empty()) container["workingDir"] = options.working_dir;
  nlohmann::json resources = Resources(request.job, member);
  if (!resources.empty()) container["resources"] = std::move(resources);
  return container;
}

nlohmann::json BuildPod(const PodRequest& request, std::vector<OutputDirectory>* ephemeral) {
  const Member& member = request.member;
  const nlohmann::json template_metadata = TemplatePart(request.pod_template, "metadata");

  // The template's labels and annotations, then ours (ours win: the operator finds its pods by
  // them).
  nlohmann::json labels = nlohmann::json::object();
  if (template_metadata.is_object() && template_metadata.contains("labels")) {
    labels = template_metadata["labels"];
  }
  labels[kReplicaTypeLabel] = RoleLabel(member.role);
  labels[kReplicaIndexLabel] = std::to_string(member.index);
  labels[kRestartGenerationLabel] = std::to_string(request.generation);
  nlohmann::json metadata = ChildMetadata(request.ref, member.pod, labels);
  if (template_metadata.is_object() && template_metadata.contains("annotations")) {
    metadata["annotations"] = template_metadata["annotations"];
  }
  const int metrics_port = RuntimeMetricsPort(request.options);
  if (request.options.runtime_scrape_annotations && metrics_port > 0) {
    // The user's own template annotations win: they may point a scraper elsewhere.
    nlohmann::json& annotations = metadata["annotations"];
    if (!annotations.is_object()) annotations = nlohmann::json::object();
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"prometheus.io/scrape", "true"},
          {"prometheus.io/port", std::to_string(metrics_port)},
          {"prometheus.io/path", "/metrics"}}) {
      if (!annotations.contains(key)) annotations[key] = value;
    }
  }

  nlohmann::json spec = InjectRuntime(TemplatePart(request.pod_template, "spec"),
                                      RuntimeContainer(request), Volumes(request));
  if (IsGpuWorker(request.job, member)) TolerateGpuNodes(spec);
  // The operator restarts the whole gang; a kubelet restarting one container in place would
  // bring back a member the others no longer wait for.
  spec["restartPolicy"] = "Never";
  // Restricted (Pod Security Standards) unless the user's template says otherwise, field by
  // field: the runtime image's user (65532, docker/runtime.Dockerfile), who also owns the
  // volumes it writes checkpoints to, and the container runtime's default seccomp profile.
  nlohmann::json& security = spec["securityContext"];
  if (!security.is_object()) security = nlohmann::json::object();
  for (const auto& [field, value] : {std::pair<const char*, nlohmann::json>{"runAsNonRoot", true},
                                     {"runAsUser", kRuntimeUser},
                                     {"runAsGroup", kRuntimeUser},
                                     {"fsGroup", kRuntimeUser},
                                     {"seccompProfile", {{"type", "RuntimeDefault"}}}}) {
    if (!security.contains(field)) security[field] = value;
  }
  std::vector<OutputDirectory> on_empty_dirs =
      AddWritableVolumes(spec, kRuntimeContainer, request.job, request.options);
  if (ephemeral != nullptr) *ephemeral = std::move(on_empty_dirs);
  // The runtime never calls the API server: no token of the namespace's service account in its
  // pods, unless the template asks for one (a sidecar of the user's may need it).
  if (!spec.contains("automountServiceAccountToken")) spec["automountServiceAccountToken"] = false;
  // <pod>.<service>.<namespace>.svc resolves only with hostname and subdomain set.
  spec["hostname"] = member.pod;
  spec["subdomain"] = ServiceName(request.ref.name);
  if (const auto& scheduling = request.job.run_policy.scheduling_policy) {
    spec["schedulerName"] = scheduling->scheduler_name;
    if (!scheduling->priority_class.empty()) {
      spec["priorityClassName"] = scheduling->priority_class;
    }
    if (UsesPodGroup(request.job, request.options.gang_scheduler)) {
      AddPodGroupMembership(metadata, PodGroupName(request.ref.name),
                            request.options.gang_scheduler);
    }
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", std::move(metadata)},
          {"spec", std::move(spec)}};
}

}  // namespace autodist::reconcile
