#include "runtime/optim/lr_schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numbers>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/common/error.h"

namespace autodist::optim {
namespace {

constexpr std::array<std::string_view, 3> kKinds = {"constant", "step", "cosine"};

// "warmupSteps" -> "warmup_steps".
std::string SnakeCase(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (std::isupper(static_cast<unsigned char>(c)) != 0) {
      if (!out.empty() && out.back() != '_') out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c == '-' ? '_' : c;
    }
  }
  return out;
}

template <typename T>
T ParseValue(const std::string& key, const std::string& text, const char* expected) {
  T value{};
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), last, value);
  bool ok = !text.empty() && ec == std::errc() && ptr == last;
  if constexpr (std::is_floating_point_v<T>) ok = ok && std::isfinite(value);
  AD_CHECK(ok, kInvalidArgument, "learning-rate schedule: option {}: expected {}, got '{}'", key,
           expected, text);
  return value;
}

std::vector<std::string> AcceptedKeys(const std::string& kind) {
  std::vector<std::string> keys{"kind", "warmup_steps", "warmup_start_factor"};
  if (kind == "step") keys.insert(keys.end(), {"step_size", "gamma"});
  if (kind == "cosine") keys.insert(keys.end(), {"total_steps", "min_lr"});
  return keys;
}

void Validate(double base_lr, const ScheduleOptions& o) {
  AD_CHECK(std::find(kKinds.begin(), kKinds.end(), o.kind) != kKinds.end(), kInvalidArgument,
           "learning-rate schedule: option kind: unknown '{}'; valid: {}", o.kind,
           fmt::join(kKinds, ", "));
  AD_CHECK(std::isfinite(base_lr) && base_lr >= 0, kInvalidArgument,
           "learning-rate schedule: base learning rate must be a finite number >= 0, got {}",
           base_lr);
  AD_CHECK(o.warmup_steps >= 0, kInvalidArgument,
           "learning-rate schedule: option warmup_steps must be >= 0, got {}", o.warmup_steps);
  AD_CHECK(o.warmup_start_factor >= 0 && o.warmup_start_factor <= 1, kInvalidArgument,
           "learning-rate schedule: option warmup_start_factor must be in [0, 1], got {}",
           o.warmup_start_factor);
  if (o.kind == "step") {
    AD_CHECK(o.step_size > 0, kInvalidArgument,
             "learning-rate schedule: option step_size must be > 0 for kind step, got {}",
             o.step_size);
    AD_CHECK(std::isfinite(o.gamma) && o.gamma >= 0, kInvalidArgument,
             "learning-rate schedule: option gamma must be a finite number >= 0, got {}", o.gamma);
  }
  if (o.kind == "cosine") {
    AD_CHECK(o.total_steps > o.warmup_steps, kInvalidArgument,
             "learning-rate schedule: option total_steps must exceed warmup_steps ({}) for kind "
             "cosine, got {}",
             o.warmup_steps, o.total_steps);
    AD_CHECK(std::isfinite(o.min_lr) && o.min_lr >= 0, kInvalidArgument,
             "learning-rate schedule: option min_lr must be a finite number >= 0, got {}",
             o.min_lr);
  }
}

}  // namespace

ScheduleOptions ParseScheduleOptions(const std::map<std::string, std::string>& options) {
  std::map<std::string, std::string> values;  // snake_case key -> value
  for (const auto& [key, value] : options) {
    const std::string normalized = SnakeCase(key);
    AD_CHECK(values.emplace(normalized, value).second, kInvalidArgument,
             "learning-rate schedule: option '{}' is given twice", normalized);
  }
  ScheduleOptions out;
  if (const auto it = values.find("kind"); it != values.end()) {
    out.kind = it->second;
    std::transform(out.kind.begin(), out.kind.end(), out.kind.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  AD_CHECK(std::find(kKinds.begin(), kKinds.end(), out.kind) != kKinds.end(), kInvalidArgument,
           "learning-rate schedule: option kind: unknown '{}'; valid: {}", out.kind,
           fmt::join(kKinds, ", "));
  const std::vector<std::string> accepted = AcceptedKeys(out.kind);
  for (const auto& [key, value] : values) {
    AD_CHECK(std::find(accepted.begin(), accepted.end(), key) != accepted.end(), kInvalidArgument,
             "learning-rate schedule of kind {} does not take option '{}'; it takes: {}", out.kind,
             key, fmt::join(accepted, ", "));
    if (key == "warmup_steps") out.warmup_steps = ParseValue<int64_t>(key, value, "an integer");
    if (key == "warmup_start_factor") {
      out.warmup_start_factor = ParseValue<double>(key, value, "a number");
    }
    if (key == "step_size") out.step_size = ParseValue<int64_t>(key, value, "an integer");
    if (key == "gamma") out.gamma = ParseValue<double>(key, value, "a number");
    if (key == "total_steps") out.total_steps = ParseValue<int64_t>(key, value, "an integer");
    if (key == "min_lr") out.min_lr = ParseValue<double>(key, value, "a number");
  }
  Validate(0.0, out);
  return out;
}

LrSchedule::LrSchedule(double base_lr, ScheduleOptions options)
    : base_lr_(base_lr), options_(std::move(options)) {
  Validate(base_lr_, options_);
}

double LrSchedule::LearningRate(int64_t step) const {
  AD_CHECK(step >= 0, kInvalidArgument,
           "learning-rate schedule: step must be >= 0 (steps already taken), got {}", step);
  const ScheduleOptions& o = options_;
  if (step < o.warmup_steps) {
    // LinearLR's closed form with end_factor 1.
    const double factor = o.warmup_start_factor + (1.0 - o.warmup_start_factor) *
                                                      static_cast<double>(step) /
                                                      static_cast<double>(o.warmup_steps);
    return base_lr_ * factor;
  }
  const int64_t t = step - o.warmup_steps;
  if (o.kind == "step") {
    const int64_t decays = t / o.step_size;  // floor: t >= 0
    return base_lr_ * std::pow(o.gamma, static_cast<double>(decays));
  }
  if (o.kind == "cosine") {
    const int64_t period = o.total_steps - o.warmup_steps;
    if (t >= period) return o.min_lr;
    return o.min_lr + (base_lr_ - o.min_lr) *
                          (1.0 + std::cos(std::numbers::pi * static_cast<double>(t) /
                                          static_cast<double>(period))) /
                          2.0;
  }
  return base_lr_;
}

}  // namespace autodist::optim
