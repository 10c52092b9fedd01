#include "operator/reconcile/compile.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "runtime/graph/graph_item.h"
#include "runtime/job/job_views.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/resource_spec.h"
#include "runtime/strategy/strategy_io.h"

namespace autodist::reconcile {
namespace {

// "ps-0:CPU:0" -> "ps-0": one parameter-server service runs per node, whatever its devices.
std::string NodeOfDevice(const std::string& device) { return device.substr(0, device.find(':')); }

std::map<std::string, int64_t> BytesPerNode(const strategy::StrategySummary& summary) {
  std::map<std::string, int64_t> bytes;
  for (const auto& [device, count] : summary.bytes_per_ps) bytes[NodeOfDevice(device)] += count;
  return bytes;
}

}  // namespace

CompiledJob CompileJob(const job::JobSpec& job, const std::vector<graph::Variable>& variables,
                       const std::optional<std::string>& profile_json) {
  const strategy::ResourceSpec resources =
      strategy::ResourceSpec::FromReplicaCounts(job::ToReplicaCounts(job));
  std::optional<strategy::StepProfile> profile;
  if (profile_json.has_value()) {
    profile = strategy::StepProfileFromJson(*profile_json, "spec.strategy.profile");
    job::CheckProfileMatches(*profile, job, variables, "spec.strategy.profile");
  }
  const strategy::CompileResult result =
      strategy::Compile(variables, resources, job::ToCompileRequest(job, profile));
  CompiledJob compiled;
  compiled.predicted_step_seconds = result.predicted_step_seconds;
  compiled.profile_json = profile_json.value_or("");
  compiled.builder = result.builder;
  compiled.note = result.note;
  compiled.builder_reason =
      !result.reason.empty() ? result.reason
                             : fmt::format("{} as spec.strategy.builder names it", result.builder);
  compiled.summary = strategy::Summarize(result.strategy, variables, resources);
  compiled.strategy_text =
      strategy::SerializeStrategy(result.strategy, strategy::StrategyFormat::kText);
  compiled.resource_spec_yaml = resources.ToYaml();
  compiled.workers = job.resources.workers;
  compiled.parameter_servers = job.resources.parameter_servers;
  return compiled;
}

nlohmann::json StrategyStatus(const CompiledJob& compiled) {
  const strategy::StrategySummary& summary = compiled.summary;
  nlohmann::json status = {
      {"builder", compiled.builder},
      {"workers", compiled.workers},
      {"parameterServers", compiled.parameter_servers},
      {"replicas", summary.replicas},
      {"variables", summary.variables},
      {"partitioned", summary.partitioned_variables},
      {"allReduceGroups", summary.allreduce_groups},
  };
  if (compiled.predicted_step_seconds.has_value()) {
    status["predictedStepMicroseconds"] =
        static_cast<int64_t>(std::llround(*compiled.predicted_step_seconds * 1e6));
  }
  if (summary.ps_shards > 0) {
    nlohmann::json bytes = nlohmann::json::object();
    for (const auto& [node, count] : BytesPerNode(summary)) bytes[node] = count;
    status["bytesPerPs"] = std::move(bytes);
  }
  return status;
}

std::string CompiledMessage(const CompiledJob& compiled) {
  const strategy::StrategySummary& summary = compiled.summary;
  std::string message =
      fmt::format("{}: {} variables ({} partitioned), {} replicas", compiled.builder,
                  summary.variables, summary.partitioned_variables, summary.replicas);
  if (summary.ps_shards > 0) {
    int64_t total = 0;
    const std::map<std::string, int64_t> bytes = BytesPerNode(summary);
    for (const auto& [node, count] : bytes) total += count;
    message += fmt::format(", {} parameter server(s) holding {}", bytes.size(),
                           strategy::FormatBytes(total));
  }
  if (summary.allreduce_shards > 0) {
    message += fmt::format(", {} all-reduce group(s)", summary.allreduce_groups);
  }
  if (!compiled.note.empty()) message += " (" + compiled.note + ")";
  return message;
}

}  // namespace autodist::reconcile
