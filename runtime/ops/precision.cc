#include "runtime/ops/precision.h"

#include <fmt/format.h>

#include "runtime/common/error.h"

namespace autodist::ops {

std::string_view PrecisionName(Precision precision) {
  return precision == Precision::kTf32 ? "tf32" : "fp32";
}

std::optional<Precision> FindPrecision(std::string_view text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "tf32") return Precision::kTf32;
  return std::nullopt;
}

std::string UnknownPrecision(std::string_view text) {
  if (text == "bf16")
    return "bf16 mixed precision is not built yet (docs/gpu.md); expected fp32 or tf32";
  return fmt::format("expected fp32 or tf32, got \"{}\"", text);
}

Precision ParsePrecision(std::string_view text, std::string_view field) {
  const std::optional<Precision> precision = FindPrecision(text);
  AD_CHECK(precision.has_value(), kInvalidArgument, "{}: {}", field, UnknownPrecision(text));
  return *precision;
}

}  // namespace autodist::ops
