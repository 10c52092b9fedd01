#include "runtime/job/job_views.h"

#include "runtime/common/error.h"
#include "runtime/optim/optimizer.h"

namespace autodist::job {

strategy::ReplicaCounts ToReplicaCounts(const JobSpec& job) {
  strategy::ReplicaCounts counts;
  counts.workers = job.resources.workers;
  counts.gpus_per_worker = job.resources.gpus_per_worker;
  counts.replicas_per_worker = job.resources.replicas_per_worker;
  counts.parameter_servers = job.resources.parameter_servers;
  counts.network_bandwidth = job.resources.network_bandwidth_gbps;
  return counts;
}

strategy::OptimizerTraits OptimizerTraitsOf(const JobSpec& job) {
  return strategy::OptimizerTraits{
      optim::SparseUpdatesChangeOnlyPresentRows(job.training.optimizer)};
}

strategy::CompileRequest ToCompileRequest(const JobSpec& job,
                                          std::optional<strategy::StepProfile> profile) {
  strategy::CompileRequest request;
  request.builder = job.strategy.builder;
  request.options = job.strategy.options;
  request.colocation = job.strategy.colocation;
  request.allow_lossy_compression = job.strategy.allow_lossy_compression;
  request.batch_per_replica = job.data.batch_size_per_replica;
  request.optimizer = OptimizerTraitsOf(job);
  request.profile = std::move(profile);
  return request;
}

std::optional<strategy::StepProfile> ReadLocalProfile(
    const JobSpec& job, const std::vector<graph::Variable>& variables) {
  if (!job.strategy.profile.has_value()) return std::nullopt;
  const ProfileSpec& spec = *job.strategy.profile;
  AD_CHECK(!spec.config_map.has_value(), kInvalidArgument,
           "job '{}': spec.strategy.profile.configMap ({}/{}) is read by the operator in a "
           "cluster; to run on this machine, set spec.strategy.profile.path to the file",
           job.metadata.name, spec.config_map->name, spec.config_map->key);
  strategy::StepProfile profile = strategy::ReadStepProfile(spec.path);
  CheckProfileMatches(profile, job, variables, "spec.strategy.profile.path: " + spec.path);
  return profile;
}

void CheckProfileMatches(const strategy::StepProfile& profile, const JobSpec& job,
                         const std::vector<graph::Variable>& variables, const std::string& source) {
  const ResourcesSpec& resources = job.resources;
  const int per_worker =
      resources.gpus_per_worker > 0 ? resources.gpus_per_worker : resources.replicas_per_worker;
  strategy::CheckProfileMatches(profile, variables, job.data.batch_size_per_replica, per_worker,
                                source);
}

int64_t TotalReplicas(const JobSpec& job) {
  const ResourcesSpec& resources = job.resources;
  const int64_t per_worker =
      resources.gpus_per_worker > 0 ? resources.gpus_per_worker : resources.replicas_per_worker;
  return static_cast<int64_t>(resources.workers) * per_worker;
}

graph::Backend WorkerBackend(const JobSpec& job) {
  return job.resources.gpus_per_worker > 0 ? graph::Backend::kCuda : graph::Backend::kCpu;
}

std::set<std::string> SumReducedStates(const JobSpec& job) {
  std::set<std::string> names;
  for (const auto& [variable, reduction] : job.strategy.state_reduction) {
    if (reduction == StateReduction::kSum) names.insert(variable);
  }
  return names;
}

const std::string& RequireLocalModel(const JobSpec& job) {
  if (job.model.config_map.has_value()) {
    Fail(ErrorCode::kInvalidArgument,
         "job '{}': spec.model.configMap ({}/{}) can only be mounted by the operator in a "
         "cluster; to run on this machine, set spec.model.path to the ONNX file",
         job.metadata.name, job.model.config_map->name, job.model.config_map->key);
  }
  AD_CHECK(!job.model.path.empty(), kInvalidArgument, "job '{}': spec.model.path is empty",
           job.metadata.name);
  return job.model.path;
}

}  // namespace autodist::job
