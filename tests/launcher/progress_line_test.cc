// The progress line: formatting of durations, rates and losses, the line itself, the recent-rate
// meter and the printer in both its live (terminal) and plain (log) modes.
#include "launcher/progress_line.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "launcher/progress_printer.h"

namespace autodist::launcher {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(FormatDurationTest, SecondsMinutesHours) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(45), "45s");
  EXPECT_EQ(FormatDuration(59.4), "59s");
  EXPECT_EQ(FormatDuration(59.5), "1m00s");  // rounds to the nearest second first
  EXPECT_EQ(FormatDuration(92), "1m32s");
  EXPECT_EQ(FormatDuration(3599), "59m59s");
  EXPECT_EQ(FormatDuration(3600), "1h00m");
  EXPECT_EQ(FormatDuration(2 * 3600 + 5 * 60), "2h05m");
  EXPECT_EQ(FormatDuration(2 * 3600 + 5 * 60 + 29), "2h05m");  // 125.48 minutes
  EXPECT_EQ(FormatDuration(2 * 3600 + 5 * 60 + 31), "2h06m");  // 125.52 minutes
  EXPECT_EQ(FormatDuration(100 * 3600), "100h00m");
}

TEST(FormatDurationTest, ValuesWithoutAMeaningfulDuration) {
  EXPECT_EQ(FormatDuration(-5), "0s");
  EXPECT_EQ(FormatDuration(std::nan("")), "0s");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FormatDuration(1e300), "inf");
}

TEST(FormatRateTest, GroupsThousandsAndKeepsADecimalForSmallRates) {
  EXPECT_EQ(FormatRate(2345), "2,345");
  EXPECT_EQ(FormatRate(2345.4), "2,345");
  EXPECT_EQ(FormatRate(1234567.4), "1,234,567");
  EXPECT_EQ(FormatRate(999.6), "1,000");
  EXPECT_EQ(FormatRate(100), "100");
  EXPECT_EQ(FormatRate(99.94), "99.9");
  EXPECT_EQ(FormatRate(99.96), "100");
  EXPECT_EQ(FormatRate(12.46), "12.5");
  EXPECT_EQ(FormatRate(0.25), "0.2");  // 0.25 is exact: rounds half to even
  EXPECT_EQ(FormatRate(0), "0");
  EXPECT_EQ(FormatRate(-3), "0");
}

TEST(FormatLossTest, FourDecimalsOrScientific) {
  EXPECT_EQ(FormatLoss(0.43214), "0.4321");
  EXPECT_EQ(FormatLoss(2.30259), "2.3026");
  EXPECT_EQ(FormatLoss(0), "0.0000");
  EXPECT_EQ(FormatLoss(2.5e-5), "2.500e-05");
  EXPECT_EQ(FormatLoss(1234567), "1.235e+06");
  EXPECT_EQ(FormatLoss(-0.5), "-0.5000");
  EXPECT_EQ(FormatLoss(std::nan("")), "nan");
  EXPECT_EQ(FormatLoss(std::numeric_limits<double>::infinity()), "inf");
}

TEST(FormatProgressTest, FullLine) {
  ProgressSnapshot snapshot;
  snapshot.step = 120;
  snapshot.total_steps = 1000;
  snapshot.loss = 0.43214;
  snapshot.samples_per_second = 2345;
  snapshot.steps_per_second = 10;  // 880 steps left: 88 s
  snapshot.elapsed_seconds = 12;
  EXPECT_EQ(FormatProgress(snapshot), "step 120/1000  loss 0.4321  2,345 samples/s  ETA 1m28s");
}

TEST(FormatProgressTest, UnknownTotalShowsTheElapsedTime) {
  ProgressSnapshot snapshot;
  snapshot.step = 120;
  snapshot.loss = 0.5;
  snapshot.samples_per_second = 640;
  snapshot.steps_per_second = 10;
  snapshot.elapsed_seconds = 185;
  EXPECT_EQ(FormatProgress(snapshot), "step 120  loss 0.5000  640 samples/s  elapsed 3m05s");
}

TEST(FormatProgressTest, NoRateMeansNoEta) {
  ProgressSnapshot snapshot;
  snapshot.total_steps = 1000;
  EXPECT_EQ(FormatProgress(snapshot), "step 0/1000");
  snapshot.elapsed_seconds = 12;
  EXPECT_EQ(FormatProgress(snapshot), "step 0/1000  elapsed 12s");
  snapshot.step = 5;
  snapshot.loss = std::nan("");
  EXPECT_EQ(FormatProgress(snapshot), "step 5/1000  loss nan  elapsed 12s");
}

TEST(FormatProgressTest, FinishedRunHasNothingLeft) {
  ProgressSnapshot snapshot;
  snapshot.step = 1000;
  snapshot.total_steps = 1000;
  snapshot.steps_per_second = 3;
  EXPECT_EQ(FormatProgress(snapshot), "step 1000/1000  ETA 0s");
}

TEST(RateMeterTest, RateBetweenTheFirstAndLastObservation) {
  RateMeter meter(20s);
  const Clock::time_point t0{};
  EXPECT_EQ(meter.StepsPerSecond(), 0);
  meter.Record(t0, 0, 0);
  EXPECT_EQ(meter.StepsPerSecond(), 0);  // one observation is no rate
  meter.Record(t0 + 1s, 10, 640);
  meter.Record(t0 + 2s, 30, 1920);
  EXPECT_DOUBLE_EQ(meter.StepsPerSecond(), 15);     // 30 steps in 2 s
  EXPECT_DOUBLE_EQ(meter.SamplesPerSecond(), 960);  // 1920 samples in 2 s
}

TEST(RateMeterTest, FollowsTheRecentRate) {
  RateMeter meter(5s);
  const Clock::time_point t0{};
  // 10 steps/s for 10 s, then 20 steps/s for 10 s; one observation per second.
  for (int t = 0; t <= 20; ++t) {
    const int64_t step = t <= 10 ? 10 * t : 100 + 20 * (t - 10);
    meter.Record(t0 + std::chrono::seconds(t), step, step * 32);
  }
  // The window reaches back to t = 15: (300 - 200) / 5 s.
  EXPECT_DOUBLE_EQ(meter.StepsPerSecond(), 20);
  EXPECT_DOUBLE_EQ(meter.SamplesPerSecond(), 640);
}

TEST(RateMeterTest, AStallLowersTheRate) {
  RateMeter meter(10s);
  const Clock::time_point t0{};
  meter.Record(t0, 0, 0);
  meter.Record(t0 + 5s, 50, 50);
  EXPECT_DOUBLE_EQ(meter.StepsPerSecond(), 10);
  meter.Record(t0 + 10s, 50, 50);  // nothing moved
  EXPECT_DOUBLE_EQ(meter.StepsPerSecond(), 5);
}

TEST(RateMeterTest, StepsGoingBackwardsStartOver) {
  RateMeter meter;
  const Clock::time_point t0{};
  meter.Record(t0, 100, 100);
  meter.Record(t0 + 1s, 200, 200);
  meter.Record(t0 + 2s, 3, 3);
  EXPECT_EQ(meter.StepsPerSecond(), 0);
  meter.Record(t0 + 4s, 13, 13);
  EXPECT_DOUBLE_EQ(meter.StepsPerSecond(), 5);
}

TEST(RateMeterTest, ObservationsAtTheSameInstantHaveNoRate) {
  RateMeter meter;
  const Clock::time_point t0{};
  meter.Record(t0, 0, 0);
  meter.Record(t0, 10, 10);
  EXPECT_EQ(meter.StepsPerSecond(), 0);
}

ProgressSnapshot Step(int64_t step) {
  ProgressSnapshot snapshot;
  snapshot.step = step;
  snapshot.total_steps = 10;
  return snapshot;
}

TEST(ProgressPrinterTest, PlainModePrintsALineEveryInterval) {
  std::ostringstream out;
  ProgressPrinter printer(out, ProgressPrinterOptions{.live = false, .plain_interval = 10s});
  const Clock::time_point t0{};
  printer.Update(Step(1), t0);        // the first one at once
  printer.Update(Step(2), t0 + 1s);   // too soon
  printer.Update(Step(3), t0 + 11s);  // 11 s after the last printed one
  printer.Update(Step(4), t0 + 12s);  // too soon, but Finish prints it
  printer.PrintLine("[worker-0] hello");
  printer.Finish();
  printer.Finish();
  printer.Update(Step(5), t0 + 60s);  // after Finish: ignored
  EXPECT_EQ(out.str(), "step 1/10\nstep 3/10\n[worker-0] hello\nstep 4/10\n");
}

TEST(ProgressPrinterTest, PlainFinishDoesNotRepeatAPrintedLine) {
  std::ostringstream out;
  ProgressPrinter printer(out, ProgressPrinterOptions{.live = false, .plain_interval = 10s});
  printer.Update(Step(7), Clock::time_point{});
  printer.Finish();
  EXPECT_EQ(out.str(), "step 7/10\n");
}

TEST(ProgressPrinterTest, LiveModeRewritesOneLine) {
  std::ostringstream out;
  ProgressPrinter printer(out, ProgressPrinterOptions{.live = true});
  printer.Update(Step(1));
  printer.Update(Step(2));
  printer.PrintLine("[ps-0] serving");
  printer.Update(Step(3));
  printer.Finish();
  EXPECT_EQ(out.str(),
            "\r\033[Kstep 1/10"
            "\r\033[Kstep 2/10"
            "\r\033[K[ps-0] serving\nstep 2/10"
            "\r\033[Kstep 3/10"
            "\n");
}

TEST(ProgressPrinterTest, LiveLinesAreCutToTheTerminalWidth) {
  std::ostringstream out;
  ProgressPrinter printer(out, ProgressPrinterOptions{.live = true, .width = 8});
  printer.Update(Step(1));  // "step 1/10" is 9 columns: 7 fit without touching the last column
  printer.PrintLine("a line longer than the width is printed whole");
  EXPECT_EQ(out.str(),
            "\r\033[Kstep 1/"
            "\r\033[Ka line longer than the width is printed whole\nstep 1/");
}

TEST(ProgressPrinterTest, LinesBeforeAnyProgressArePrintedPlainly) {
  std::ostringstream out;
  ProgressPrinter printer(out, ProgressPrinterOptions{.live = true});
  printer.PrintLine("starting");
  printer.Finish();
  EXPECT_EQ(out.str(), "starting\n");
}

}  // namespace
}  // namespace autodist::launcher
