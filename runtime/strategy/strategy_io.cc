#include "runtime/strategy/strategy_io.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include "runtime/common/error.h"

namespace autodist::strategy {

StrategyFormat ParseStrategyFormat(const std::string& name) {
  if (name == "text") return StrategyFormat::kText;
  if (name == "json") return StrategyFormat::kJson;
  if (name == "binary") return StrategyFormat::kBinary;
  Fail(ErrorCode::kInvalidArgument, "unknown strategy format '{}'; valid: text, json, binary",
       name);
}

std::string SerializeStrategy(const autodist::proto::Strategy& strategy, StrategyFormat format) {
  std::string out;
  switch (format) {
    case StrategyFormat::kText:
      AD_CHECK(google::protobuf::TextFormat::PrintToString(strategy, &out), kInternal,
               "cannot print the strategy as text");
      return out;
    case StrategyFormat::kJson: {
      google::protobuf::util::JsonPrintOptions options;
      options.add_whitespace = true;
      options.preserve_proto_field_names = true;  // AutoDist's names: var_name, part_config...
      const auto status = google::protobuf::util::MessageToJsonString(strategy, &out, options);
      AD_CHECK(status.ok(), kInternal, "cannot print the strategy as JSON: {}", status.ToString());
      return out;
    }
    case StrategyFormat::kBinary:
      AD_CHECK(strategy.SerializeToString(&out), kInternal, "cannot serialize the strategy");
      return out;
  }
  Fail(ErrorCode::kInternal, "unhandled strategy format");
}

autodist::proto::Strategy DeserializeStrategy(const std::string& bytes, StrategyFormat format,
                                              const std::string& source) {
  autodist::proto::Strategy strategy;
  bool ok = false;
  switch (format) {
    case StrategyFormat::kText:
      ok = google::protobuf::TextFormat::ParseFromString(bytes, &strategy);
      break;
    case StrategyFormat::kJson:
      ok = google::protobuf::util::JsonStringToMessage(bytes, &strategy).ok();
      break;
    case StrategyFormat::kBinary:
      ok = strategy.ParseFromString(bytes);
      break;
  }
  AD_CHECK(ok, kInvalidArgument, "'{}' is not a valid strategy in the expected format", source);
  return strategy;
}

}  // namespace autodist::strategy
