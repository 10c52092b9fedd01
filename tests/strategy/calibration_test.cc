// Calibration's arithmetic on hand-made runs (calibration.h): a collective's cost from two runs
// of the same bytes in different numbers of collectives, the step's overhead from what remains,
// a round's cost and the share of its wire a PS step waits for from two PS runs, and the floors.
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
  CalibrateParameterServers(Measured(4.0, 5.0, 0, 1), Measured(4.0, 5.0, 0, 1), profile);
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
  // No wire to tell the runs apart: the whole run's residual is the round's.
  CalibrateParameterServers(Measured(6.0, 5.25, 0, 1), Measured(6.5, 5.25, 0, 1), profile);
  EXPECT_NEAR(profile.ps_round_seconds, 0.95e-3, kTolerance);
  EXPECT_EQ(profile.ps_wire_share, 1);
  // A run without a round says nothing of one.
  CalibrateParameterServers(Measured(9.0, 5.0, 3, 0), Measured(9.0, 5.0, 3, 0), profile);
  EXPECT_NEAR(profile.ps_round_seconds, 0.95e-3, kTolerance);
}

TEST(CalibrationTest, WireThatPartitioningDidNotSaveWasHiddenUnderServing) {
  StepProfile profile = Isolated();
  // The whole run: 10 ms of wire, 2 ms beyond its prediction. The partitioned run: 5 ms of wire
  // (predicted 5 ms less), 5 ms beyond. Only 2 ms of the 5 ms predicted saved were: the step
  // waits for 40% of its wire, and the 6 ms of wire it does not wait for are serving, with 2 ms
  // more: the round costs 8 ms more.
  CalibrateParameterServers(Measured(32.0, 30.0, 0, 1, 10.0), Measured(30.0, 25.0, 0, 1, 5.0),
                            profile);
  EXPECT_NEAR(profile.ps_wire_share, 0.4, kTolerance);
  EXPECT_NEAR(profile.ps_round_seconds, 0.2e-3 + 8e-3, kTolerance);
}

TEST(CalibrationTest, TheWireShareHasAFloorAndNoRiseAndNeedsEnoughWireSaved) {
  // Partitioning saved nothing of 5 ms: the share stops at its floor, the rest is the round's.
  StepProfile floor = Isolated();
  CalibrateParameterServers(Measured(32.0, 30.0, 0, 1, 10.0), Measured(32.0, 25.0, 0, 1, 5.0),
                            floor);
  EXPECT_NEAR(floor.ps_wire_share, kMinimumPsWireShare, kTolerance);
  EXPECT_NEAR(floor.ps_round_seconds, 0.2e-3 + 2e-3 + 7.5e-3, kTolerance);
  // Partitioning saved more than predicted: the wire is not made slower here (duplex efficiency
  // is the all-reduce runs'), and the whole run's residual is the round's.
  StepProfile faster = Isolated();
  CalibrateParameterServers(Measured(32.0, 30.0, 0, 1, 10.0), Measured(25.0, 25.0, 0, 1, 5.0),
                            faster);
  EXPECT_EQ(faster.ps_wire_share, 1);
  EXPECT_NEAR(faster.ps_round_seconds, 0.2e-3 + 2e-3, kTolerance);
  // 2 ms of wire saved in a 32 ms step is under kPsWireSensitivity: noise, not a share.
  StepProfile little = Isolated();
  CalibrateParameterServers(Measured(32.0, 30.0, 0, 1, 4.0), Measured(32.0, 28.0, 0, 1, 2.0),
                            little);
  EXPECT_EQ(little.ps_wire_share, 1);
  EXPECT_NEAR(little.ps_round_seconds, 0.2e-3 + 2e-3, kTolerance);
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
