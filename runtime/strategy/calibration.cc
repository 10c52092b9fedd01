#include "runtime/strategy/calibration.h"

#include <algorithm>

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
  profile.step_overhead_seconds += std::max(0.0, rest);
}

void CalibrateRound(const CalibrationRun& ps, StepProfile& profile) {
  if (ps.predicted.ps_rounds == 0) return;
  profile.ps_round_seconds += std::max(0.0, ps.Residual());
}

}  // namespace autodist::strategy
