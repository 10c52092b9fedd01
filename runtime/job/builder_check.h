// Checks a strategy builder's name and options when a manifest is parsed, long before there is a
// model to compile: the builder's own factory runs on the options (the code path Compile takes),
// so the parser accepts exactly what the compiler will.
#pragma once

#include <string>

#include "runtime/strategy/builder_options.h"

namespace autodist::job {

// Where a builder puts the variables, which decides whether dedicated parameter servers make
// sense.
enum class BuilderPlacement {
  kParameterServers,  // PS, PSLoadBalancing, PartitionedPS, UnevenPartitionedPS, Parallax (sparse)
  kAllReduce,         // AllReduce, PartitionedAR, RandomAxisPartitionAR: no variable on a PS
  kChosenByAuto,      // Auto: depends on the model and the GPUs, known at compile time
};

// Throws InvalidArgument (the strategy module's message) for an unknown builder, an option the
// builder does not take or a bad value; Auto takes no options.
BuilderPlacement CheckBuilderOptions(const std::string& builder,
                                     const strategy::BuilderOptions& options);

}  // namespace autodist::job
