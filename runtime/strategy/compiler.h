// The strategy compiler: variables + ResourceSpec + builder name/options -> Strategy.
// One library used by the `autodist` CLI, the operator and the runtime.
#pragma once

#include <string>
#include <vector>

#include "proto/strategy.pb.h"
#include "runtime/graph/variable.h"
#include "runtime/strategy/builder.h"
#include "runtime/strategy/builder_options.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::strategy {

struct CompileRequest {
  std::string builder = "Auto";  // one of BuilderNames()
  BuilderOptions options;        // raw key=value options of that builder
  ColocationGroups colocation;   // variables kept together on one parameter server
};

struct CompileResult {
  autodist::proto::Strategy strategy;
  std::string builder;  // the builder that ran (Auto resolved to its choice)
  std::string note;     // why Auto chose it; notes about ignored settings
  std::string reason;   // why Auto chose it (as in the note); empty when the request named it
};

// The nine builder names, AutoDist's eight then "Auto".
const std::vector<std::string>& BuilderNames();

// Auto's documented rule: PSLoadBalancing when there are no GPUs; Parallax when there are
// sparse variables; AllReduce otherwise. Returns the name and fills `reason`.
std::string ChooseAutoBuilder(const std::vector<graph::Variable>& variables,
                              const ResourceSpec& resources, std::string& reason);

// Compiles a Strategy. `variables` are the trainable variables in model order. The id is a
// digest of the strategy's content, so compiling the same inputs twice gives the same bytes.
// Throws InvalidArgument for an unknown builder, bad options, no variables, no replicas or
// colocation groups naming unknown variables.
CompileResult Compile(const std::vector<graph::Variable>& variables, const ResourceSpec& resources,
                      const CompileRequest& request);

}  // namespace autodist::strategy
