// The one live progress line of `autodist run`:
//   step 120/1000  loss 0.4321  2,345 samples/s  ETA 1m32s
// rendered by pure functions from a snapshot, with the rates measured over a recent window so the
// ETA follows the current speed rather than the average since start.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace autodist::launcher {

struct ProgressSnapshot {
  int64_t step = 0;            // steps completed
  int64_t total_steps = 0;     // 0: unknown
  std::optional<double> loss;  // the latest loss; none before the first step reports one
  double samples_per_second = 0;
  double steps_per_second = 0;  // recent rate, for the ETA; 0: not measured yet
  double elapsed_seconds = 0;
};

// "step 120/1000  loss 0.4321  2,345 samples/s  ETA 1m32s". Fields without a value are left out
// (loss before the first step, the rate while it is 0). The last field is the ETA when the total
// and a rate are known, otherwise the elapsed time ("elapsed 3m05s").
std::string FormatProgress(const ProgressSnapshot& snapshot);

// "45s", "1m32s", "2h05m" (seconds dropped from an hour on, rounded to the nearest minute).
// Negative or NaN durations read "0s", infinite ones "inf".
std::string FormatDuration(double seconds);

// A rate for people: "2,345" (grouped thousands, no decimals) from 100 on, "12.5" below.
std::string FormatRate(double per_second);

// A loss value: "0.4321"; "3.210e-05" when four decimals would hide it; "nan"/"inf" as such.
std::string FormatLoss(double loss);

// Steps and samples per second over the last `window` of observations.
class RateMeter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RateMeter(std::chrono::milliseconds window = std::chrono::seconds(20));

  // Records the cumulative step and sample counts at time `at`. Record on every poll, even when
  // nothing moved, so that a stall shows as a falling rate. A step count that goes backwards
  // (a restart) starts the measurement over.
  void Record(Clock::time_point at, int64_t step, int64_t samples);

  // Rates between the oldest observation in the window and the newest; 0 with fewer than two.
  double StepsPerSecond() const;
  double SamplesPerSecond() const;

 private:
  struct Observation {
    Clock::time_point at;
    int64_t step;
    int64_t samples;
  };
  double Rate(int64_t Observation::*count) const;

  std::chrono::milliseconds window_;
  std::deque<Observation> observations_;
};

}  // namespace autodist::launcher
