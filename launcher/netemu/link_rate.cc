#include "launcher/netemu/link_rate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "runtime/common/error.h"

namespace autodist::netemu {
namespace {

constexpr double kMinimumBits = 1e3;
constexpr double kMaximumBits = 1e12;

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

std::optional<int64_t> ParseLinkRate(const std::string& text, const std::string& what) {
  std::string rate = Lowercase(text);
  if (rate == "unshaped") return std::nullopt;
  const auto bad = [&]() {
    Fail(ErrorCode::kInvalidArgument,
         "{}: '{}' is not a link rate: expected a number and a unit, like 100mbit, 1gbit or "
         "2.5gbit, or 'unshaped'",
         what, text);
  };
  if (rate.ends_with("/s")) rate.resize(rate.size() - 2);
  double scale = 0;
  for (const auto& [unit, factor] : {std::pair{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}}) {
    if (rate.ends_with(unit)) {
      scale = factor;
      rate.resize(rate.size() - std::string_view(unit).size());
      break;
    }
  }
  if (scale == 0 || rate.empty()) bad();
  double number = 0;
  const auto [end, error] = std::from_chars(rate.data(), rate.data() + rate.size(), number);
  if (error != std::errc() || end != rate.data() + rate.size() || !std::isfinite(number)) bad();
  const double bits = number * scale;
  AD_CHECK(bits >= kMinimumBits && bits <= kMaximumBits, kInvalidArgument,
           "{}: link rate '{}' is out of range: expected 1kbit to 1000gbit", what, text);
  return static_cast<int64_t>(std::llround(bits));
}

std::string FormatLinkRate(const std::optional<int64_t>& bits_per_second) {
  if (!bits_per_second) return "unshaped";
  const auto bits = static_cast<double>(*bits_per_second);
  if (bits >= 1e9) return fmt::format("{:g} Gbit/s", bits / 1e9);
  if (bits >= 1e6) return fmt::format("{:g} Mbit/s", bits / 1e6);
  return fmt::format("{:g} kbit/s", bits / 1e3);
}

}  // namespace autodist::netemu
