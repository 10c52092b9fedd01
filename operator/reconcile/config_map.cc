#include "operator/reconcile/config_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "operator/reconcile/names.h"
#include "operator/reconcile/object_meta.h"
#include "runtime/common/error.h"
#include "runtime/job/job_writer.h"
#include "runtime/strategy/summary.h"

namespace autodist::reconcile {
namespace {

// The API server's rule (ValidateConfigMap): the values' lengths, summed, at most 1 MiB.
void CheckSize(const std::string& name, const nlohmann::json& data) {
  size_t total = 0;
  std::vector<std::pair<size_t, std::string>> sizes;
  for (const auto& [key, value] : data.items()) {
    const size_t size = value.get_ref<const std::string&>().size();
    total += size;
    sizes.emplace_back(size, key);
  }
  if (total <= kMaxConfigMapBytes) return;
  std::sort(sizes.rbegin(), sizes.rend());
  std::string parts;
  for (const auto& [size, key] : sizes) {
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", key,
                         strategy::FormatBytes(static_cast<int64_t>(size)));
  }
  Fail(ErrorCode::kInvalidArgument,
       "the job's ConfigMap {} would hold {} ({}), more than the {} bytes the API server stores "
       "in a ConfigMap; the compiled Strategy grows with the model's variables, their partitions "
       "and the replicas",
       name, strategy::FormatBytes(static_cast<int64_t>(total)), parts, kMaxConfigMapBytes);
}

}  // namespace

std::string PodManifest(const job::JobSpec& job, const ReconcilerOptions& options) {
  job::JobSpec pod_job = job;
  // Changes with every write of the object; the pods need none of it.
  pod_job.metadata.resource_version.clear();
  if (pod_job.model.config_map.has_value()) {
    pod_job.model.path = options.model_mount_path + "/" + pod_job.model.config_map->key;
    pod_job.model.config_map.reset();
  }
  // The operator read the profile and put it in this ConfigMap: the chief compiles with the
  // same bytes, wherever the manifest said they were.
  if (pod_job.strategy.profile.has_value()) {
    pod_job.strategy.profile = job::ProfileSpec{options.config_mount_path + "/" + kProfileKey, {}};
  }
  return job::JobToYaml(pod_job);
}

bool ForcesResume(const job::JobSpec& job, bool continuing) {
  return continuing && job.training.checkpoint.has_value() && !job.training.checkpoint->resume;
}

nlohmann::json BuildConfigMap(const JobRef& ref, const job::JobSpec& job,
                              const CompiledJob& compiled, const ReconcilerOptions& options) {
  nlohmann::json data = {
      {kManifestKey, PodManifest(job, options)},
      {kStrategyKey, compiled.strategy_text},
      {kResourceSpecKey, compiled.resource_spec_yaml},
      {kSummaryKey, strategy::FormatSummary(compiled.summary, compiled.builder)},
  };
  if (!compiled.profile_json.empty()) data[kProfileKey] = compiled.profile_json;
  CheckSize(ConfigMapName(ref.name), data);
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", ChildMetadata(ref, ConfigMapName(ref.name))},
          {"data", std::move(data)}};
}

}  // namespace autodist::reconcile
