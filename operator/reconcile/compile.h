// Compiling a job's Strategy as the chief will (same variables, same ResourceSpec from the
// job's replica counts, same builder and options), and summarizing it for the job's status.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph/variable.h"
#include "runtime/job/job_spec.h"
#include "runtime/strategy/summary.h"

namespace autodist::reconcile {

struct CompiledJob {
  std::string builder;  // the builder that ran (Auto resolved)
  std::string note;     // why Auto chose it, ignored settings
  // Why this builder: Auto's reason, or the manifest naming it (the BuilderChosen Event).
  std::string builder_reason;
  strategy::StrategySummary summary;
  std::string strategy_text;       // protobuf text format (the ConfigMap's strategy.pbtxt)
  std::string resource_spec_yaml;  // the ResourceSpec compiled against (resource_spec.yml)
  int workers = 0;
  int parameter_servers = 0;
  // Auto: the predicted step time of its choice, and the profile it read (the ConfigMap's
  // profile.json, which the chief compiles with again; empty when the manifest names none).
  std::optional<double> predicted_step_seconds;
  std::string profile_json;
};

// Compiles as the chief will; `profile_json` is spec.strategy.profile's text (nullopt: none).
// Throws InvalidArgument when the compiler rejects the job (no variables, colocation groups
// naming unknown variables, a profile that is not one or was taken on another model, ...).
CompiledJob CompileJob(const job::JobSpec& job, const std::vector<graph::Variable>& variables,
                       const std::optional<std::string>& profile_json = std::nullopt);

// status.strategy: builder, workers, parameterServers, replicas, variables, partitioned,
// bytesPerPs (parameter-server node -> bytes; only when a parameter server holds anything),
// allReduceGroups, and for Auto predictedStepMicroseconds (its cost model's step time).
nlohmann::json StrategyStatus(const CompiledJob& compiled);

// One line for the Compiled condition: "PSLoadBalancing: 6 variables (0 partitioned), 2 replicas,
// 1 parameter server(s) holding 794.4 KiB".
std::string CompiledMessage(const CompiledJob& compiled);

}  // namespace autodist::reconcile
