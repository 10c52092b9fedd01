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
#include "runtime/config/option_map.h"

namespace autodist::optim {
namespace {

constexpr std::array<std::string_view, 3> kKinds = {"constant", "step", "cosine"};

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
  config::OptionMap reader("learning-rate schedule", options);
  ScheduleOptions out;
  if (const std::string* kind = reader.Find("kind")) out.kind = config::Lowercase(*kind);
  AD_CHECK(std::find(kKinds.begin(), kKinds.end(), out.kind) != kKinds.end(), kInvalidArgument,
           "learning-rate schedule: option kind: unknown '{}'; valid: {}", out.kind,
           fmt::join(kKinds, ", "));
  reader.RejectOthers(AcceptedKeys(out.kind), "learning-rate schedule of kind " + out.kind);
  out.warmup_steps = reader.Int("warmup_steps").value_or(out.warmup_steps);
  out.warmup_start_factor = reader.Number("warmup_start_factor").value_or(out.warmup_start_factor);
  out.step_size = reader.Int("step_size").value_or(out.step_size);
  out.gamma = reader.Number("gamma").value_or(out.gamma);
  out.total_steps = reader.Int("total_steps").value_or(out.total_steps);
  out.min_lr = reader.Number("min_lr").value_or(out.min_lr);
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
