// Factories of the builders, one per file. Each reads its options from `reader`; the compiler
// (compiler.cc) maps builder names to these.
#pragma once

#include <memory>

#include "runtime/strategy/builder.h"

namespace autodist::strategy {

std::unique_ptr<StrategyBuilder> MakePsBuilder(OptionReader& reader);
std::unique_ptr<StrategyBuilder> MakePsLoadBalancingBuilder(OptionReader& reader);
std::unique_ptr<StrategyBuilder> MakePartitionedPsBuilder(OptionReader& reader);
std::unique_ptr<StrategyBuilder> MakeUnevenPartitionedPsBuilder(OptionReader& reader);
std::unique_ptr<StrategyBuilder> MakeAllReduceBuilder(OptionReader& reader);
std::unique_ptr<StrategyBuilder> MakePartitionedArBuilder(OptionReader& reader);
std::unique_ptr<StrategyBuilder> MakeRandomAxisPartitionArBuilder(OptionReader& reader);
std::unique_ptr<StrategyBuilder> MakeParallaxBuilder(OptionReader& reader);

}  // namespace autodist::strategy
