#include "runtime/strategy/builder_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/config/option_map.h"

namespace autodist::strategy {
namespace {

// Matches `value` against the names of a protobuf enum, case-insensitively.
template <typename EnumType>
EnumType ParseEnum(const google::protobuf::EnumDescriptor* descriptor, const std::string& builder,
                   const std::string& key, const std::string& value) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto* candidate = descriptor->value(i);
    if (config::Lowercase(candidate->name()) == config::Lowercase(value))
      return static_cast<EnumType>(candidate->number());
    names.push_back(candidate->name());
  }
  Fail(ErrorCode::kInvalidArgument, "builder {}: option {}: unknown value '{}'; valid: {}", builder,
       key, value, fmt::join(names, ", "));
}

}  // namespace

OptionReader::OptionReader(std::string builder, const BuilderOptions& options)
    : builder_(std::move(builder)), options_("builder " + builder_, options) {}

bool OptionReader::Bool(const std::string& key, bool default_value) {
  return options_.Bool(key).value_or(default_value);
}

int64_t OptionReader::Int64(const std::string& key, int64_t default_value) {
  return options_.Int(key).value_or(default_value);
}

double OptionReader::Double(const std::string& key, double default_value, double minimum,
                            double maximum) {
  const std::string* text = options_.Find(key);
  if (text == nullptr) return default_value;
  const std::optional<double> value = config::ParseFiniteNumber(*text);
  if (!value.has_value() || *value <= minimum || *value > maximum) {
    options_.FailValue(key, fmt::format("a number in ({}, {}]", minimum, maximum), *text);
  }
  return *value;
}

bool OptionReader::Given(const std::string& key) const { return options_.Has(key); }

int OptionReader::Int(const std::string& key, int default_value, int minimum) {
  const int64_t parsed = Int64(key, default_value);
  AD_CHECK(parsed >= minimum && parsed <= std::numeric_limits<int>::max(), kInvalidArgument,
           "builder {}: option {} must be >= {}, got {}", builder_, key, minimum, parsed);
  return static_cast<int>(parsed);
}

autodist::proto::AllReduceSynchronizer::Spec OptionReader::Spec(
    const std::string& key, autodist::proto::AllReduceSynchronizer::Spec default_value) {
  const std::string* value = options_.Find(key);
  if (value == nullptr) return default_value;
  return ParseEnum<autodist::proto::AllReduceSynchronizer::Spec>(
      autodist::proto::AllReduceSynchronizer::Spec_descriptor(), builder_, key, *value);
}

autodist::proto::AllReduceSynchronizer::Compressor OptionReader::Compressor(
    const std::string& key, autodist::proto::AllReduceSynchronizer::Compressor default_value) {
  const std::string* value = options_.Find(key);
  if (value == nullptr) return default_value;
  return ParseEnum<autodist::proto::AllReduceSynchronizer::Compressor>(
      autodist::proto::AllReduceSynchronizer::Compressor_descriptor(), builder_, key, *value);
}

void OptionReader::RejectUnread() const { options_.RejectUnread(); }

PsOptions ReadPsOptions(OptionReader& reader) {
  using autodist::proto::AllReduceSynchronizer;
  PsOptions options;
  options.local_proxy_variable = reader.Bool("local_proxy_variable", false);
  options.sync = reader.Bool("sync", true);
  options.staleness = reader.Int("staleness", 0, 0);
  AD_CHECK(options.staleness == 0 || options.sync, kInvalidArgument,
           "staleness={} needs sync=true: bounded staleness only applies to synchronous training",
           options.staleness);
  options.compressor = reader.Compressor("compressor", AllReduceSynchronizer::NoneCompressor);
  AD_CHECK(options.compressor != AllReduceSynchronizer::PowerSGDCompressor, kInvalidArgument,
           "compressor=PowerSGDCompressor needs an all-reduce (its factors are summed across "
           "workers); pushes to a parameter server take NoneCompressor, HorovodCompressor, "
           "HorovodCompressorEF or TopKCompressorEF");
  AD_CHECK(!reader.Given("topk_fraction") ||
               options.compressor == AllReduceSynchronizer::TopKCompressorEF,
           kInvalidArgument, "option topk_fraction applies only to compressor=TopKCompressorEF");
  options.topk_fraction = reader.Double("topk_fraction", 0.01, 0.0, 1.0);
  return options;
}

AllReduceOptions ReadAllReduceOptions(OptionReader& reader,
                                      autodist::proto::AllReduceSynchronizer::Spec spec,
                                      bool with_compressor) {
  using autodist::proto::AllReduceSynchronizer;
  AllReduceOptions options;
  options.chunk_size = reader.Int("chunk_size", 128, 1);
  options.spec = reader.Spec("all_reduce_spec", spec);
  if (!with_compressor) return options;
  options.compressor = reader.Compressor("compressor", AllReduceSynchronizer::NoneCompressor);
  const auto only_with = [&](const char* key, AllReduceSynchronizer::Compressor compressor) {
    AD_CHECK(!reader.Given(key) || options.compressor == compressor, kInvalidArgument,
             "option {} applies only to compressor={}", key,
             AllReduceSynchronizer::Compressor_Name(compressor));
  };
  only_with("powersgd_rank", AllReduceSynchronizer::PowerSGDCompressor);
  only_with("powersgd_start_step", AllReduceSynchronizer::PowerSGDCompressor);
  only_with("min_compression_elements", AllReduceSynchronizer::PowerSGDCompressor);
  only_with("topk_fraction", AllReduceSynchronizer::TopKCompressorEF);
  options.powersgd_rank = reader.Int("powersgd_rank", 1, 1);
  options.powersgd_start_step = reader.Int64("powersgd_start_step", 0);
  AD_CHECK(options.powersgd_start_step >= 0, kInvalidArgument,
           "option powersgd_start_step must be >= 0, got {}", options.powersgd_start_step);
  options.min_compression_elements = reader.Int64("min_compression_elements", 0);
  AD_CHECK(options.min_compression_elements >= 0, kInvalidArgument,
           "option min_compression_elements must be >= 0, got {}",
           options.min_compression_elements);
  options.topk_fraction = reader.Double("topk_fraction", 0.01, 0.0, 1.0);
  return options;
}

}  // namespace autodist::strategy
