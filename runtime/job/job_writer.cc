#include "runtime/job/job_writer.h"

#include <yaml-cpp/yaml.h>

#include "runtime/common/error.h"
#include "runtime/job/yaml_writer.h"

namespace autodist::job {
namespace {

using detail::EmitString;

void EmitStringField(YAML::Emitter& out, const char* key, const std::string& value) {
  out << YAML::Key << key << YAML::Value;
  EmitString(out, value);
}

void EmitStringMap(YAML::Emitter& out, const char* key,
                   const std::map<std::string, std::string>& values) {
  if (values.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (const auto& [name, value] : values) {
    out << YAML::Key;
    EmitString(out, name);
    out << YAML::Value;
    EmitString(out, value);
  }
  out << YAML::EndMap;
}

// Option values are numbers, booleans and names: written plain, as a user writes them.
void EmitOptions(YAML::Emitter& out, const std::map<std::string, std::string>& options) {
  for (const auto& [key, value] : options) out << YAML::Key << key << YAML::Value << value;
}

void EmitFiles(YAML::Emitter& out, const char* key, const StringPairs& files) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (const auto& [input, path] : files) {
    out << YAML::Key;
    EmitString(out, input);
    out << YAML::Value;
    EmitString(out, path);
  }
  out << YAML::EndMap;
}

void EmitMetadata(YAML::Emitter& out, const JobMetadata& metadata) {
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  EmitStringField(out, "name", metadata.name);
  if (!metadata.namespace_name.empty()) EmitStringField(out, "namespace", metadata.namespace_name);
  EmitStringMap(out, "labels", metadata.labels);
  EmitStringMap(out, "annotations", metadata.annotations);
  if (!metadata.uid.empty()) EmitStringField(out, "uid", metadata.uid);
  if (!metadata.resource_version.empty()) {
    EmitStringField(out, "resourceVersion", metadata.resource_version);
  }
  if (metadata.generation.has_value()) {
    out << YAML::Key << "generation" << YAML::Value << *metadata.generation;
  }
  out << YAML::EndMap;
}

void EmitModel(YAML::Emitter& out, const ModelSpec& model) {
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  if (model.config_map.has_value()) {
    out << YAML::Key << "configMap" << YAML::Value << YAML::BeginMap;
    EmitStringField(out, "name", model.config_map->name);
    EmitStringField(out, "key", model.config_map->key);
    out << YAML::EndMap;
  } else {
    EmitStringField(out, "path", model.path);
  }
  if (!model.loss.empty()) EmitStringField(out, "loss", model.loss);
  EmitStringField(out, "logits", model.logits);
  EmitStringField(out, "labels", model.labels);
  out << YAML::EndMap;
}

void EmitData(YAML::Emitter& out, const DataSpec& data) {
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << DataFormatName(data.format);
  if (data.format == DataFormat::kFashionMnist) {
    EmitStringField(out, "dir", data.dir);
  } else {
    EmitFiles(out, "train", data.train);
    if (!data.eval.empty()) EmitFiles(out, "eval", data.eval);
  }
  out << YAML::Key << "batchSizePerReplica" << YAML::Value << data.batch_size_per_replica;
  out << YAML::Key << "evalBatchSize" << YAML::Value << data.eval_batch_size;
  out << YAML::Key << "shuffle" << YAML::Value << data.shuffle;
  out << YAML::Key << "seed" << YAML::Value << data.seed;
  out << YAML::EndMap;
}

void EmitTraining(YAML::Emitter& out, const TrainingSpec& training) {
  out << YAML::Key << "training" << YAML::Value << YAML::BeginMap;
  if (training.epochs > 0) out << YAML::Key << "epochs" << YAML::Value << training.epochs;
  if (training.steps > 0) out << YAML::Key << "steps" << YAML::Value << training.steps;
  out << YAML::Key << "optimizer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << training.optimizer.name;
  EmitOptions(out, training.optimizer_options);
  out << YAML::EndMap;
  if (!training.lr_schedule_options.empty()) {
    out << YAML::Key << "lrSchedule" << YAML::Value << YAML::BeginMap;
    EmitOptions(out, training.lr_schedule_options);
    out << YAML::EndMap;
  }
  if (training.checkpoint.has_value()) {
    out << YAML::Key << "checkpoint" << YAML::Value << YAML::BeginMap;
    EmitStringField(out, "path", training.checkpoint->path);
    out << YAML::Key << "intervalSteps" << YAML::Value << training.checkpoint->interval_steps;
    out << YAML::Key << "resume" << YAML::Value << training.checkpoint->resume;
    out << YAML::Key << "keep" << YAML::Value << training.checkpoint->keep;
    out << YAML::EndMap;
  }
  out << YAML::Key << "evalIntervalSteps" << YAML::Value << training.eval_interval_steps;
  out << YAML::Key << "logIntervalSteps" << YAML::Value << training.log_interval_steps;
  if (!training.export_path.empty()) EmitStringField(out, "exportPath", training.export_path);
  if (training.export_external_data) {
    out << YAML::Key << "exportExternalData" << YAML::Value << true;
  }
  if (training.precision != ops::Precision::kFp32) {
    out << YAML::Key << "precision" << YAML::Value
        << std::string(ops::PrecisionName(training.precision));
  }
  if (!training.tensorboard_path.empty()) {
    out << YAML::Key << "tensorboard" << YAML::Value << YAML::BeginMap;
    EmitStringField(out, "path", training.tensorboard_path);
    out << YAML::EndMap;
  }
  if (!training.timeline_path.empty()) {
    out << YAML::Key << "timeline" << YAML::Value << YAML::BeginMap;
    EmitStringField(out, "path", training.timeline_path);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

void EmitStrategy(YAML::Emitter& out, const StrategySpec& strategy) {
  out << YAML::Key << "strategy" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "builder" << YAML::Value << strategy.builder;
  if (!strategy.options.empty()) {
    out << YAML::Key << "options" << YAML::Value << YAML::BeginMap;
    EmitOptions(out, strategy.options);
    out << YAML::EndMap;
  }
  if (!strategy.colocation.empty()) {
    out << YAML::Key << "colocation" << YAML::Value << YAML::BeginSeq;
    for (const std::vector<std::string>& group : strategy.colocation) {
      out << YAML::Flow << YAML::BeginSeq;
      for (const std::string& name : group) EmitString(out, name);
      out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
  }
  if (!strategy.state_reduction.empty()) {
    out << YAML::Key << "stateReduction" << YAML::Value << YAML::BeginMap;
    for (const auto& [variable, reduction] : strategy.state_reduction) {
      out << YAML::Key;
      EmitString(out, variable);
      out << YAML::Value << StateReductionName(reduction);
    }
    out << YAML::EndMap;
  }
  if (strategy.allow_lossy_compression) {
    out << YAML::Key << "allowLossyCompression" << YAML::Value << true;
  }
  if (strategy.profile.has_value()) {
    out << YAML::Key << "profile" << YAML::Value << YAML::BeginMap;
    if (!strategy.profile->path.empty()) EmitStringField(out, "path", strategy.profile->path);
    if (strategy.profile->config_map.has_value()) {
      out << YAML::Key << "configMap" << YAML::Value << YAML::BeginMap;
      EmitStringField(out, "name", strategy.profile->config_map->name);
      EmitStringField(out, "key", strategy.profile->config_map->key);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

void EmitResources(YAML::Emitter& out, const ResourcesSpec& resources) {
  out << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "workers" << YAML::Value << resources.workers;
  out << YAML::Key << "gpusPerWorker" << YAML::Value << resources.gpus_per_worker;
  out << YAML::Key << "replicasPerWorker" << YAML::Value << resources.replicas_per_worker;
  out << YAML::Key << "parameterServers" << YAML::Value << resources.parameter_servers;
  if (resources.network_bandwidth_gbps.has_value()) {
    out << YAML::Key << "networkBandwidthGbps" << YAML::Value << *resources.network_bandwidth_gbps;
  }
  // Quoted as Kubernetes writes quantities ("2" would otherwise be an integer).
  if (!resources.cpu.empty()) {
    out << YAML::Key << "cpu" << YAML::Value << YAML::DoubleQuoted << resources.cpu;
  }
  if (!resources.memory.empty()) {
    out << YAML::Key << "memory" << YAML::Value << YAML::DoubleQuoted << resources.memory;
  }
  if (!resources.shared_memory.empty()) {
    out << YAML::Key << "sharedMemory" << YAML::Value << YAML::DoubleQuoted
        << resources.shared_memory;
  }
  const NcclSpec& nccl = resources.nccl;
  if (nccl != NcclSpec{}) {
    out << YAML::Key << "nccl" << YAML::Value << YAML::BeginMap;
    if (!nccl.socket_ifname.empty()) {
      out << YAML::Key << "socketIfname" << YAML::Value << YAML::DoubleQuoted << nccl.socket_ifname;
    }
    if (!nccl.debug.empty()) out << YAML::Key << "debug" << YAML::Value << nccl.debug;
    if (nccl.ib_disable) out << YAML::Key << "ibDisable" << YAML::Value << *nccl.ib_disable;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

void EmitRunPolicy(YAML::Emitter& out, const RunPolicy& policy) {
  out << YAML::Key << "runPolicy" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "restartPolicy" << YAML::Value << RestartPolicyName(policy.restart_policy);
  if (policy.backoff_limit.has_value()) {
    out << YAML::Key << "backoffLimit" << YAML::Value << *policy.backoff_limit;
  }
  if (policy.active_deadline_seconds.has_value()) {
    out << YAML::Key << "activeDeadlineSeconds" << YAML::Value << *policy.active_deadline_seconds;
  }
  if (policy.ttl_seconds_after_finished.has_value()) {
    out << YAML::Key << "ttlSecondsAfterFinished" << YAML::Value
        << *policy.ttl_seconds_after_finished;
  }
  out << YAML::Key << "cleanPodPolicy" << YAML::Value
      << CleanPodPolicyName(policy.clean_pod_policy);
  out << YAML::Key << "suspend" << YAML::Value << policy.suspend;
  if (policy.scheduling_policy.has_value()) {
    const SchedulingPolicy& scheduling = *policy.scheduling_policy;
    out << YAML::Key << "schedulingPolicy" << YAML::Value << YAML::BeginMap;
    EmitStringField(out, "schedulerName", scheduling.scheduler_name);
    if (!scheduling.queue.empty()) EmitStringField(out, "queue", scheduling.queue);
    if (!scheduling.priority_class.empty()) {
      EmitStringField(out, "priorityClass", scheduling.priority_class);
    }
    if (scheduling.schedule_timeout_seconds.has_value()) {
      out << YAML::Key << "scheduleTimeoutSeconds" << YAML::Value
          << *scheduling.schedule_timeout_seconds;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace

std::string JobToYaml(const JobSpec& job) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << kApiVersion;
  out << YAML::Key << "kind" << YAML::Value << kKind;
  EmitMetadata(out, job.metadata);
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  EmitModel(out, job.model);
  EmitData(out, job.data);
  EmitTraining(out, job.training);
  EmitStrategy(out, job.strategy);
  EmitResources(out, job.resources);
  EmitRunPolicy(out, job.run_policy);
  if (!job.pod_template.empty()) {
    YAML::Node pod_template;
    try {
      pod_template = YAML::Load(job.pod_template);
    } catch (const YAML::Exception& e) {
      Fail(ErrorCode::kInvalidArgument, "job '{}': the pod template is not valid YAML: {}",
           job.metadata.name, e.what());
    }
    out << YAML::Key << "template" << YAML::Value;
    detail::EmitNode(out, pod_template);
  }
  out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace autodist::job
