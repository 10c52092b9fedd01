#include "runtime/strategy/calibration.h"

#include <algorithm>
#include <cmath>

namespace autodist::strategy {

void CalibrateCollectives(const CalibrationRun& fused, const CalibrationRun& apart,
                          StepProfile& profile) {
  const int more_collectives = apart.predicted.collectives - fused.predicted.collectives;
  double per_collective = 0;
  if (more_collectives > 0) {
    per_collective = std::max(0.0, (apart.Residual() - fused.Residual()) / more_collectives);
  } else if (fused.predicted.collectives > 0) {
    per_collective = std::max(0.0, fused.Residual() / fused.predicted.collectives);
  }
  profile.collective_seconds += per_collective;
  double rest = fused.Residual() - per_collective * fused.predicted.collectives;
  if (rest <= 0) return;
  // Only a run whose wire is most of its step says how fast the wire went: otherwise the rest is
  // as likely the step's own (a sparse table's gathers and scatters) and stays overhead.
  if (fused.wire_seconds > 0 &&
      fused.wire_seconds >= kWireShareForEfficiency * fused.predicted.total_seconds) {
    const double slower =
        std::min(1.0, std::max(kMinimumDuplexEfficiency / profile.duplex_efficiency,
                               fused.wire_seconds / (fused.wire_seconds + rest)));
    profile.duplex_efficiency *= slower;
    rest -= fused.wire_seconds * (1 / slower - 1);
  }
  // The predictions held the overhead known so far; the rest is beyond it.
  profile.all_reduce_overhead_seconds += std::max(0.0, rest);
}

void CalibrateOverlap(const std::function<OverlapRuns(const StepProfile&)>& predict,
                      StepProfile& profile) {
  const OverlapRuns as_is = predict(profile);
  const int middle_more = as_is.middle.predicted.collectives - as_is.fused.predicted.collectives;
  const int apart_more = as_is.apart.predicted.collectives - as_is.fused.predicted.collectives;
  if (middle_more <= 0 || apart_more <= middle_more) return;
  StepProfile trial = profile;
  // Where backward is short beside the wire, no efficiency changes the runs by more than their
  // noise, and the fit would follow the noise.
  trial.overlap_efficiency = kMinimumOverlapEfficiency;
  const double reach =
      predict(trial).middle.predicted.total_seconds - as_is.middle.predicted.total_seconds;
  if (reach < kOverlapSensitivity * as_is.middle.measured_seconds) return;
  double best_error = -1;
  // Whole steps down from 1, so every machine tries the same efficiencies.
  const auto steps =
      static_cast<int>(std::lround((1 - kMinimumOverlapEfficiency) / kOverlapEfficiencyStep));
  for (int i = 0; i <= steps; ++i) {
    trial.overlap_efficiency = 1 - i * kOverlapEfficiencyStep;
    const OverlapRuns runs = predict(trial);
    const double per_collective =
        std::max(0.0, (runs.apart.Residual() - runs.fused.Residual()) / apart_more);
    const double error =
        std::abs(runs.middle.Residual() - runs.fused.Residual() - per_collective * middle_more);
    if (best_error < 0 || error < best_error) {
      best_error = error;
      profile.overlap_efficiency = trial.overlap_efficiency;
    }
  }
}

void CalibrateParameterServers(const CalibrationRun& whole, const CalibrationRun& partitioned,
                               StepProfile& profile) {
  if (whole.predicted.ps_rounds == 0) return;
  double share = 1;  // of the wire as predicted so far
  const double wire_saved = whole.wire_seconds - partitioned.wire_seconds;
  if (partitioned.predicted.ps_rounds > 0 && wire_saved > 0 &&
      wire_saved >= kPsWireSensitivity * whole.measured_seconds) {
    const double not_saved = (partitioned.Residual() - whole.Residual()) / wire_saved;
    share =
        std::clamp(1 - not_saved, std::min(1.0, kMinimumPsWireShare / profile.ps_wire_share), 1.0);
  }
  profile.ps_wire_share *= share;
  // The whole run as predicted with the new share waits (1 - share) of its wire less.
  profile.ps_round_seconds += std::max(0.0, whole.Residual() + (1 - share) * whole.wire_seconds);
}

}  // namespace autodist::strategy
