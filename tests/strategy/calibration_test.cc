// Calibration's arithmetic on hand-made runs (calibration.h): a collective's cost from two runs
// of the same bytes in different numbers of collectives, the step's overhead from what remains,
// a round's cost from the PS run, and the floors.
#include "runtime/strategy/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace autodist::strategy {
namespace {

constexpr double kTolerance = 1e-12;

CalibrationRun Measured(double measured_ms, double predicted_ms, int collectives, int rounds = 0,
                        double wire_ms = 0) {
  CalibrationRun run;
  run.wire_seconds = wire_ms * 1e-3;
  run.measured_seconds = measured_ms * 1e-3;
  run.predicted.total_seconds = predicted_ms * 1e-3;
  run.predicted.collectives = collectives;
  run.predicted.ps_rounds = rounds;
  return run;
}

StepProfile Isolated() {
  StepProfile profile;
  profile.collective_seconds = 0.1e-3;
  profile.ps_round_seconds = 0.2e-3;
  return profile;
}

TEST(CalibrationTest, MoreCollectivesOfTheSameBytesGiveTheCollectivesCostTheRestIsTheSteps) {
  StepProfile profile = Isolated();
  // 1 collective: 0.9 ms beyond the prediction; 6 collectives: 2.4 ms beyond. So each costs
  // 0.3 ms more than alone, and the step 0.6 ms.
  CalibrateCollectives(Measured(3.0, 2.1, 1), Measured(4.9, 2.5, 6), profile);
  EXPECT_NEAR(profile.collective_seconds, 0.4e-3, kTolerance);
  EXPECT_NEAR(profile.all_reduce_overhead_seconds, 0.6e-3, kTolerance);
  EXPECT_NEAR(profile.ps_round_seconds, 0.2e-3, kTolerance);  // untouched
}

TEST(CalibrationTest, OneVariableLeavesTheWholeResidualToItsCollective) {
  StepProfile profile = Isolated();
  CalibrateCollectives(Measured(3.0, 2.0, 1), Measured(3.1, 2.0, 1), profile);
  EXPECT_NEAR(profile.collective_seconds, 1.1e-3, kTolerance);
  EXPECT_EQ(profile.all_reduce_overhead_seconds, 0);
}

TEST(CalibrationTest, NoCostFallsBelowWhatWasMeasuredAlone) {
  StepProfile profile = Isolated();
  // More collectives measured faster (noise), and a run faster than predicted.
  CalibrateCollectives(Measured(2.0, 2.5, 1), Measured(1.9, 2.6, 6), profile);
  EXPECT_NEAR(profile.collective_seconds, 0.1e-3, kTolerance);
  EXPECT_EQ(profile.all_reduce_overhead_seconds, 0);
  CalibrateRound(Measured(4.0, 5.0, 0, 1), profile);
  EXPECT_NEAR(profile.ps_round_seconds, 0.2e-3, kTolerance);
}

// A toy world for CalibrateOverlap: 15 ms of compute, then a collective's 10 ms of wire of which
// `window` ms may overlap backward at the efficiency; each collective costs 0.2 ms beyond the
// prediction and every step 1 ms. `fused` does not overlap.
OverlapRuns ToyRuns(const StepProfile& profile, double true_efficiency, double window) {
  const auto predicted = [&](double efficiency, bool overlaps) {
    return 15 + (overlaps ? std::max(0.0, 10 - window * efficiency) : 10);
  };
  const auto run = [&](int collectives, bool overlaps) {
    const double measured = predicted(true_efficiency, overlaps) + 1 + 0.2 * collectives;
    return Measured(measured, predicted(profile.overlap_efficiency, overlaps), collectives);
  };
  return OverlapRuns{run(1, false), run(3, true), run(12, true)};
}

TEST(CalibrationTest, TheOverlapEfficiencyIsTheOneThatExplainsTheMiddleRun) {
  for (const double truth : {1.0, 0.6, 0.3}) {
    StepProfile profile = Isolated();
    CalibrateOverlap([&](const StepProfile& p) { return ToyRuns(p, truth, 8); }, profile);
    EXPECT_NEAR(profile.overlap_efficiency, truth, kTolerance) << truth;
  }
}

TEST(CalibrationTest, TheOverlapEfficiencyStaysWhereTheRunsCannotTellIt) {
  // Backward too short beside the wire: no efficiency moves the middle run by 10% of its step.
  StepProfile profile = Isolated();
  CalibrateOverlap([&](const StepProfile& p) { return ToyRuns(p, 0.3, 0.5); }, profile);
  EXPECT_EQ(profile.overlap_efficiency, 1);
  // The middle run with as many collectives as the fused one.
  CalibrateOverlap(
      [&](const StepProfile& p) {
        OverlapRuns runs = ToyRuns(p, 0.3, 8);
        runs.middle.predicted.collectives = 1;
        return runs;
      },
      profile);
  EXPECT_EQ(profile.overlap_efficiency, 1);
}

TEST(CalibrationTest, TheRoundTakesThePsRunsResidual) {
  StepProfile profile = Isolated();
  CalibrateRound(Measured(6.0, 5.25, 0, 1), profile);
  EXPECT_NEAR(profile.ps_round_seconds, 0.95e-3, kTolerance);
  // A run without a round says nothing of one.
  CalibrateRound(Measured(9.0, 5.0, 3, 0), profile);
  EXPECT_NEAR(profile.ps_round_seconds, 0.95e-3, kTolerance);
}

TEST(CalibrationTest, WhatRemainsSlowsTheWireThenBecomesTheStepsOverhead) {
  StepProfile profile = Isolated();
  // 1 and 6 collectives: 0.1 ms each beyond alone; 2 ms remain of the fused run, whose wire is
  // 8 ms: the wire took 10 ms, so a link both ways reaches 80%.
  CalibrateCollectives(Measured(12.1, 10.0, 1, 0, 8.0), Measured(12.7, 10.1, 6, 0, 8.0), profile);
  EXPECT_NEAR(profile.collective_seconds, 0.2e-3, kTolerance);
  EXPECT_NEAR(profile.duplex_efficiency, 0.8, kTolerance);
  EXPECT_NEAR(profile.all_reduce_overhead_seconds, 0, kTolerance);
  // A wire of 1 ms cannot take 5 ms more: the efficiency stops at 50% (1 ms more) and the other
  // 4 ms are the step's.
  StepProfile floor = Isolated();
  CalibrateCollectives(Measured(7.0, 2.0, 1, 0, 1.0), Measured(7.0, 2.0, 1, 0, 1.0), floor);
  EXPECT_NEAR(floor.collective_seconds, 5.1e-3, kTolerance);  // one variable: all the collective's
  StepProfile floor_apart = Isolated();
  CalibrateCollectives(Measured(7.0, 2.0, 1, 0, 1.0), Measured(7.5, 2.0, 6, 0, 1.0), floor_apart);
  EXPECT_NEAR(floor_apart.collective_seconds, 0.2e-3, kTolerance);
  EXPECT_NEAR(floor_apart.duplex_efficiency, kMinimumDuplexEfficiency, kTolerance);
  EXPECT_NEAR(floor_apart.all_reduce_overhead_seconds, 4.9e-3 - 1e-3, kTolerance);
}

TEST(CalibrationTest, ARunWhoseWireIsLittleOfItsStepLeavesTheEfficiencyAlone) {
  StepProfile profile = Isolated();
  // 0.5 ms of wire in a 2 ms step: the 4.9 ms left (a sparse table's gathers, say) are the step's.
  CalibrateCollectives(Measured(7.0, 2.0, 1, 0, 0.5), Measured(7.5, 2.0, 6, 0, 0.5), profile);
  EXPECT_EQ(profile.duplex_efficiency, 1);
  EXPECT_NEAR(profile.all_reduce_overhead_seconds, 4.9e-3, kTolerance);
}

}  // namespace
}  // namespace autodist::strategy
