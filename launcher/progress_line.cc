#include "launcher/progress_line.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace autodist::launcher {

std::string FormatDuration(double seconds) {
  if (std::isnan(seconds) || seconds < 0) return "0s";
  // Beyond ~30 million years the count would overflow; nobody waits that long.
  if (std::isinf(seconds) || seconds >= 1e15) return "inf";
  const long long whole = std::llround(seconds);
  if (whole < 60) return fmt::format("{}s", whole);
  if (whole < 3600) return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  const long long minutes = (whole + 30) / 60;
  return fmt::format("{}h{:02}m", minutes / 60, minutes % 60);
}

std::string FormatRate(double per_second) {
  if (!(per_second > 0)) return "0";
  if (std::isinf(per_second)) return "inf";
  // Below 100 one decimal still matters; from 99.95 on it would round to "100.0".
  if (per_second < 99.95) return fmt::format("{:.1f}", per_second);
  const std::string digits = fmt::format("{:.0f}", per_second);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped;
}

std::string FormatLoss(double loss) {
  if (std::isnan(loss)) return "nan";
  if (std::isinf(loss)) return loss > 0 ? "inf" : "-inf";
  const double magnitude = std::fabs(loss);
  if (loss != 0 && (magnitude < 1e-3 || magnitude >= 1e6)) return fmt::format("{:.3e}", loss);
  return fmt::format("{:.4f}", loss);
}

std::string FormatProgress(const ProgressSnapshot& snapshot) {
  std::string line = fmt::format("step {}", snapshot.step);
  if (snapshot.total_steps > 0) line += fmt::format("/{}", snapshot.total_steps);
  if (snapshot.loss) line += fmt::format("  loss {}", FormatLoss(*snapshot.loss));
  if (snapshot.samples_per_second > 0) {
    line += fmt::format("  {} samples/s", FormatRate(snapshot.samples_per_second));
  }
  if (snapshot.total_steps > 0 && snapshot.steps_per_second > 0) {
    const int64_t remaining = std::max<int64_t>(0, snapshot.total_steps - snapshot.step);
    line += fmt::format("  ETA {}",
                        FormatDuration(static_cast<double>(remaining) / snapshot.steps_per_second));
  } else if (snapshot.elapsed_seconds > 0) {
    line += fmt::format("  elapsed {}", FormatDuration(snapshot.elapsed_seconds));
  }
  return line;
}

RateMeter::RateMeter(std::chrono::milliseconds window) : window_(window) {}

void RateMeter::Record(Clock::time_point at, int64_t step, int64_t samples) {
  if (!observations_.empty() && step < observations_.back().step) observations_.clear();
  observations_.push_back({at, step, samples});
  // Keep one observation at or before the window's start, so the rate spans the whole window.
  while (observations_.size() >= 2 && observations_[1].at <= at - window_) {
    observations_.pop_front();
  }
}

double RateMeter::Rate(int64_t Observation::*count) const {
  if (observations_.size() < 2) return 0;
  const Observation& first = observations_.front();
  const Observation& last = observations_.back();
  const double seconds = std::chrono::duration<double>(last.at - first.at).count();
  if (seconds <= 0) return 0;
  return static_cast<double>(last.*count - first.*count) / seconds;
}

double RateMeter::StepsPerSecond() const { return Rate(&Observation::step); }

double RateMeter::SamplesPerSecond() const { return Rate(&Observation::samples); }

}  // namespace autodist::launcher
