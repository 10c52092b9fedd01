// The strategy compiler: variables + ResourceSpec + builder name/options -> Strategy.
// One library used by the `autodist` CLI, the operator and the runtime.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "proto/strategy.pb.h"
#include "runtime/graph/variable.h"
#include "runtime/strategy/auto_search.h"
#include "runtime/strategy/builder.h"
#include "runtime/strategy/builder_options.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::strategy {

struct CompileRequest {
  std::string builder = "Auto";  // one of BuilderNames()
  BuilderOptions options;        // raw key=value options of that builder (Auto: sync, staleness)
  ColocationGroups colocation;   // variables kept together on one parameter server
  // What Auto's cost model reads (auto_search.h). Without a profile, the estimate from the
  // variables at `batch_per_replica` samples per replica.
  std::optional<StepProfile> profile;
  int64_t batch_per_replica = 32;
  bool allow_lossy_compression = false;
  NetworkAssumptions network;
  OptimizerTraits optimizer;  // of the job's optimizer; unknown: every row moves
};

struct CompileResult {
  autodist::proto::Strategy strategy;
  std::string builder;  // the builder that ran (Auto resolved to its choice)
  std::string note;     // why Auto chose it; notes about ignored settings
  std::string reason;   // why Auto chose it (as in the note); empty when the request named it
  // Auto: every candidate, fastest first (ranking[0] is the choice), and the inputs it used.
  std::vector<RankedCandidate> ranking;
  AutoInputs auto_inputs;
  // Auto's predicted step time of its choice, in seconds.
  std::optional<double> predicted_step_seconds;
};

// The nine builder names, AutoDist's eight then "Auto".
const std::vector<std::string>& BuilderNames();

// What the cost model reads for `request` (auto_search.h): its options, lossy compression, the
// network assumptions and its profile, or the estimate from `variables` without one.
AutoInputs CostModelInputs(const std::vector<graph::Variable>& variables,
                           const ResourceSpec& resources, const CompileRequest& request);

// Compiles a Strategy. `variables` are the trainable variables in model order. The id is a
// digest of the strategy's content, so compiling the same inputs twice gives the same bytes.
// Auto compiles every candidate and keeps the one the cost model predicts fastest
// (auto_search.h). Throws InvalidArgument for an unknown builder, bad options, no variables, no
// replicas, colocation groups naming unknown variables, or a profile of another model.
CompileResult Compile(const std::vector<graph::Variable>& variables, const ResourceSpec& resources,
                      const CompileRequest& request);

}  // namespace autodist::strategy
