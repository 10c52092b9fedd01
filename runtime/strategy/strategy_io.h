// Strategy serialization in the three formats `autodist compile` writes: protobuf text format,
// JSON (proto3 JSON mapping with AutoDist's field names) and binary.
#pragma once

#include <string>

#include "proto/strategy.pb.h"

namespace autodist::strategy {

enum class StrategyFormat { kText, kJson, kBinary };

// "text" | "json" | "binary"; throws InvalidArgument listing them otherwise.
StrategyFormat ParseStrategyFormat(const std::string& name);

std::string SerializeStrategy(const autodist::proto::Strategy& strategy, StrategyFormat format);

// Parses bytes in `format`; `source` names them in errors.
autodist::proto::Strategy DeserializeStrategy(const std::string& bytes, StrategyFormat format,
                                              const std::string& source);

}  // namespace autodist::strategy
