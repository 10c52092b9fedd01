#include "runtime/job/builder_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <map>
#include <memory>

#include "runtime/common/error.h"
#include "runtime/strategy/builders.h"
#include "runtime/strategy/compiler.h"

namespace autodist::job {
namespace {

using Factory = std::function<std::unique_ptr<strategy::StrategyBuilder>(strategy::OptionReader&)>;

// The same name -> factory pairs as the compiler's table (runtime/strategy/compiler.cc); a test
// checks that every name of strategy::BuilderNames() is here.
const std::map<std::string, Factory>& Factories() {
  static const auto* factories = new std::map<std::string, Factory>{
      {"PS", &strategy::MakePsBuilder},
      {"PSLoadBalancing", &strategy::MakePsLoadBalancingBuilder},
      {"PartitionedPS", &strategy::MakePartitionedPsBuilder},
      {"UnevenPartitionedPS", &strategy::MakeUnevenPartitionedPsBuilder},
      {"AllReduce", &strategy::MakeAllReduceBuilder},
      {"PartitionedAR", &strategy::MakePartitionedArBuilder},
      {"RandomAxisPartitionAR", &strategy::MakeRandomAxisPartitionArBuilder},
      {"Parallax", &strategy::MakeParallaxBuilder},
  };
  return *factories;
}

}  // namespace

BuilderPlacement CheckBuilderOptions(const std::string& builder,
                                     const strategy::BuilderOptions& options) {
  if (builder == "Auto") {
    strategy::ReadAutoOptions(options);
    return BuilderPlacement::kChosenByAuto;
  }
  const auto factory = Factories().find(builder);
  if (factory == Factories().end()) {
    Fail(ErrorCode::kInvalidArgument, "unknown strategy builder '{}'; valid: {}", builder,
         fmt::join(strategy::BuilderNames(), ", "));
  }
  strategy::OptionReader reader(builder, options);
  const std::unique_ptr<strategy::StrategyBuilder> made = factory->second(reader);
  reader.RejectUnread();
  return made->UsesParameterServers() ? BuilderPlacement::kParameterServers
                                      : BuilderPlacement::kAllReduce;
}

}  // namespace autodist::job
