#include "runtime/ops/precision.h"

#include <fmt/format.h>

#include "runtime/common/error.h"

namespace autodist::ops {

std::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

std::optional<Precision> FindPrecision(std::string_view text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "tf32") return Precision::kTf32;
  if (text == "bf16") return Precision::kBf16;
  return std::nullopt;
}

std::string UnknownPrecision(std::string_view text) {
  return fmt::format("expected fp32, tf32 or bf16, got \"{}\"", text);
}

Precision ParsePrecision(std::string_view text, std::string_view field) {
  const std::optional<Precision> precision = FindPrecision(text);
  AD_CHECK(precision.has_value(), kInvalidArgument, "{}: {}", field, UnknownPrecision(text));
  return *precision;
}

}  // namespace autodist::ops
