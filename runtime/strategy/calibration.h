// How `autodist profile` turns its calibration runs into the step profile's fixed costs: what a
// job adds to a collective, to a parameter-server round and to a step beyond the costs measured
// in isolation (docs/strategies.md, "Inputs"). Plain arithmetic, kept apart from the runs so
// that it can be checked on hand-made figures.
#pragma once

#include <functional>

#include "runtime/strategy/cost_model.h"
#include "runtime/strategy/step_profile.h"

namespace autodist::strategy {

// One calibration run: its measured step, the cost model's prediction of that same run, and how
// much of the prediction is the wire (the prediction less the same on links without a limit).
struct CalibrationRun {
  double measured_seconds = 0;
  StepPrediction predicted;
  double wire_seconds = 0;

  double Residual() const { return measured_seconds - predicted.total_seconds; }
};

// The lowest duplex efficiency calibration infers: below it, what remains is the step's overhead.
inline constexpr double kMinimumDuplexEfficiency = 0.5;
// The least share of the fused run's predicted step its wire must be for calibration to infer a
// duplex efficiency from it.
inline constexpr double kWireShareForEfficiency = 0.5;

// From two all-reduce runs of the same bytes, `fused` in fewer collectives than `apart`:
//   * the difference of their residuals over the difference of their collectives is what a job
//     adds to one collective;
//   * what remains of `fused`'s residual slows its wire, where the wire is most of its step
//     (kWireShareForEfficiency): the duplex efficiency (step_profile.h) falls so that the wire
//     takes that much longer (down to kMinimumDuplexEfficiency);
//   * what still remains is the step's own overhead, the same for every strategy.
// Where the two runs have as many collectives (a model of one variable), the collective and the
// rest cannot be told apart and `fused`'s whole residual goes to its collectives. No cost goes
// below what was measured in isolation (a collective) or 0 (the overhead). Both runs must have
// been predicted with `profile` as it is now.
void CalibrateCollectives(const CalibrationRun& fused, const CalibrationRun& apart,
                          StepProfile& profile);

// The overlap efficiencies (step_profile.h) CalibrateOverlap tries: from 1 down in these steps.
inline constexpr double kOverlapEfficiencyStep = 0.05;
inline constexpr double kMinimumOverlapEfficiency = 0.1;
// The least share of the middle run's measured step that the efficiency must be able to move
// its prediction by (from 1 to the minimum) for CalibrateOverlap to fit it.
inline constexpr double kOverlapSensitivity = 0.1;

// Three all-reduce runs of the same bytes in more and more collectives, as predicted with a
// given profile.
struct OverlapRuns {
  CalibrationRun fused;
  CalibrationRun middle;
  CalibrationRun apart;
};

// Sets `profile`'s overlap efficiency to the one that best explains three runs: with it, the cost
// per collective that `fused` and `apart` imply (as CalibrateCollectives takes it) also accounts
// for `middle`. The runs differ in how much of their wire overlaps backward as well as in their
// collectives, and two runs cannot tell those apart. `predict` predicts the runs with a profile
// (`profile` with another efficiency). Leaves the efficiency as it is when `middle` does not
// have more collectives than `fused` and fewer than `apart`, or when no efficiency would move its
// prediction by kOverlapSensitivity of its step; ties go to the higher efficiency.
void CalibrateOverlap(const std::function<OverlapRuns(const StepProfile&)>& predict,
                      StepProfile& profile);

// The lowest parameter-server wire share (step_profile.h) calibration infers.
inline constexpr double kMinimumPsWireShare = 0.25;
// The least share of the whole run's measured step by which the partitioned run's predicted wire
// must be shorter for CalibrateParameterServers to infer a wire share from the two.
inline constexpr double kPsWireSensitivity = 0.1;

// From two parameter-server runs of the same bytes predicted with `profile` after
// CalibrateCollectives: `whole` with every variable on one server, `partitioned` with every
// variable cut across the workers' servers, so that its busiest links carry about half.
//   * Where the partitioned run's residual exceeds the whole run's, the wire it saved was not
//     saved in full: the difference over the wire saved is the share of the wire that serving
//     work hid (ps_wire_share falls by it, down to kMinimumPsWireShare). Only where the wire
//     saved is at least kPsWireSensitivity of the whole run's step; else it stays as it is.
//   * The whole run's residual, with that share, is what a job adds to a round: its serving
//     (ps_round_seconds, never below what it was).
void CalibrateParameterServers(const CalibrationRun& whole, const CalibrationRun& partitioned,
                               StepProfile& profile);

}  // namespace autodist::strategy
