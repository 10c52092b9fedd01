#include "operator/reconcile/config_map.h"

#include "operator/reconcile/names.h"
#include "operator/reconcile/object_meta.h"
#include "runtime/job/job_writer.h"
#include "runtime/strategy/summary.h"

namespace autodist::reconcile {
namespace {

bool HasRestartManifest(const job::JobSpec& job) {
  return job.training.checkpoint.has_value() && !job.training.checkpoint->resume;
}

nlohmann::json ClusterJson(const JobMembers& members) {
  nlohmann::json list = nlohmann::json::array();
  for (const Member& member : members.members) {
    list.push_back({{"node", member.node},
                    {"pod", member.pod},
                    {"role", RoleLabel(member.role)},
                    {"rank", member.index},
                    {"address", member.Endpoint()}});
  }
  return {{"coordinator", members.Coordinator()}, {"members", std::move(list)}};
}

}  // namespace

std::string PodManifest(const job::JobSpec& job, const ReconcilerOptions& options, bool resume) {
  job::JobSpec pod_job = job;
  // Changes with every write of the object; the pods need none of it.
  pod_job.metadata.resource_version.clear();
  if (pod_job.model.config_map.has_value()) {
    pod_job.model.path = options.model_mount_path + "/" + pod_job.model.config_map->key;
    pod_job.model.config_map.reset();
  }
  if (resume && pod_job.training.checkpoint.has_value()) pod_job.training.checkpoint->resume = true;
  return job::JobToYaml(pod_job);
}

const char* ManifestKey(const job::JobSpec& job, bool continuing) {
  return continuing && HasRestartManifest(job) ? kRestartManifestKey : kManifestKey;
}

nlohmann::json BuildConfigMap(const JobRef& ref, const job::JobSpec& job,
                              const CompiledJob& compiled, const JobMembers& members,
                              const ReconcilerOptions& options) {
  nlohmann::json data = {
      {kManifestKey, PodManifest(job, options, false)},
      {kStrategyKey, compiled.strategy_text},
      {kResourceSpecKey, compiled.resource_spec_yaml},
      {kClusterKey, ClusterJson(members).dump(2) + "\n"},
      {kSummaryKey, strategy::FormatSummary(compiled.summary, compiled.builder)},
  };
  if (HasRestartManifest(job)) data[kRestartManifestKey] = PodManifest(job, options, true);
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", ChildMetadata(ref, ConfigMapName(ref.name))},
          {"data", std::move(data)}};
}

}  // namespace autodist::reconcile
