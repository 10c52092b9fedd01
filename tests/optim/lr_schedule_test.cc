// Learning-rate schedules against torch.optim.lr_scheduler (tests/fixtures/optim/schedules.txt,
// from tests/optim/make_reference.py), hand-computed values, and option errors.
#include "runtime/optim/lr_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "runtime/common/error.h"
#include "tests/optim/optim_test_util.h"
#include "tests/optim/reference_data.h"

namespace autodist::optim::testing {
namespace {

using ::autodist::optim::testing::ErrorOf;
using ::testing::HasSubstr;

TEST(LrScheduleTest, MatchesTorchSchedulers) {
  const std::vector<ReferenceSchedule> schedules = ReadSchedules();
  ASSERT_EQ(schedules.size(), 5U);
  for (const ReferenceSchedule& s : schedules) {
    SCOPED_TRACE("schedule " + s.name);
    ASSERT_FALSE(s.rates.empty());
    const LrSchedule schedule(s.base_lr, ParseScheduleOptions(s.options));
    for (size_t step = 0; step < s.rates.size(); ++step) {
      // torch computes most of these recursively (lr * gamma, ratios of cosines), we in closed
      // form: equal up to double rounding.
      EXPECT_NEAR(schedule.LearningRate(static_cast<int64_t>(step)), s.rates[step],
                  1e-12 * s.base_lr)
          << "step " << step;
    }
  }
}

TEST(LrScheduleTest, HandComputedValues) {
  // Constant, no options: the base rate forever.
  const LrSchedule constant(0.5, ScheduleOptions{});
  EXPECT_EQ(constant.LearningRate(0), 0.5);
  EXPECT_EQ(constant.LearningRate(1000000), 0.5);

  // StepLR: 0.1 * 0.5^floor(t / 2).
  ScheduleOptions step;
  step.kind = "step";
  step.step_size = 2;
  step.gamma = 0.5;
  const LrSchedule stepped(0.1, step);
  EXPECT_DOUBLE_EQ(stepped.LearningRate(1), 0.1);
  EXPECT_DOUBLE_EQ(stepped.LearningRate(2), 0.05);
  EXPECT_DOUBLE_EQ(stepped.LearningRate(5), 0.025);

  // Warm-up from zero over 4 steps, then cosine over the remaining 8 to 0.01; after total_steps
  // the rate stays at min_lr.
  ScheduleOptions cosine;
  cosine.kind = "cosine";
  cosine.warmup_steps = 4;
  cosine.warmup_start_factor = 0.0;
  cosine.total_steps = 12;
  cosine.min_lr = 0.01;
  const LrSchedule annealed(1.0, cosine);
  EXPECT_DOUBLE_EQ(annealed.LearningRate(0), 0.0);
  EXPECT_DOUBLE_EQ(annealed.LearningRate(1), 0.25);
  EXPECT_DOUBLE_EQ(annealed.LearningRate(3), 0.75);
  EXPECT_DOUBLE_EQ(annealed.LearningRate(4), 1.0);
  EXPECT_DOUBLE_EQ(annealed.LearningRate(8), 0.01 + 0.99 * 0.5);  // halfway: cos(pi/2) = 0
  EXPECT_DOUBLE_EQ(annealed.LearningRate(6),
                   0.01 + 0.99 * (1 + std::cos(std::numbers::pi / 4)) / 2);
  EXPECT_DOUBLE_EQ(annealed.LearningRate(12), 0.01);
  EXPECT_DOUBLE_EQ(annealed.LearningRate(100), 0.01);

  // The default warm-up factor is LinearLR's 1/3.
  ScheduleOptions warm;
  warm.warmup_steps = 2;
  const LrSchedule warmed(0.3, warm);
  EXPECT_DOUBLE_EQ(warmed.LearningRate(0), 0.1);
  EXPECT_DOUBLE_EQ(warmed.LearningRate(1), 0.2);
  EXPECT_DOUBLE_EQ(warmed.LearningRate(2), 0.3);
}

TEST(LrScheduleTest, ParsesOptions) {
  const ScheduleOptions parsed = ParseScheduleOptions({{"kind", "Cosine"},
                                                       {"warmupSteps", "10"},
                                                       {"warmup_start_factor", "0.1"},
                                                       {"totalSteps", "100"},
                                                       {"min_lr", "1e-5"}});
  EXPECT_EQ(parsed.kind, "cosine");
  EXPECT_EQ(parsed.warmup_steps, 10);
  EXPECT_EQ(parsed.warmup_start_factor, 0.1);
  EXPECT_EQ(parsed.total_steps, 100);
  EXPECT_EQ(parsed.min_lr, 1e-5);

  const ScheduleOptions defaults = ParseScheduleOptions({});
  EXPECT_EQ(defaults.kind, "constant");
  EXPECT_EQ(defaults.warmup_steps, 0);
  EXPECT_DOUBLE_EQ(defaults.warmup_start_factor, 1.0 / 3.0);

  const ScheduleOptions step =
      ParseScheduleOptions({{"kind", "step"}, {"step_size", "30"}, {"gamma", "0.2"}});
  EXPECT_EQ(step.step_size, 30);
  EXPECT_EQ(step.gamma, 0.2);
}

TEST(LrScheduleTest, ErrorsNameTheOption) {
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"kind", "exponential"}});
              }),
              HasSubstr("option kind: unknown 'exponential'; valid: constant, step, cosine"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"kind", "cosine"}, {"gamma", "0.5"}});
              }),
              HasSubstr("schedule of kind cosine does not take option 'gamma'; it takes: kind, "
                        "warmup_steps, warmup_start_factor, total_steps, min_lr"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"step_size", "3"}});
              }),
              HasSubstr("schedule of kind constant does not take option 'step_size'"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"kind", "step"}, {"step_size", "3.5"}});
              }),
              HasSubstr("option step_size: expected an integer, got '3.5'"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"kind", "step"}});
              }),
              HasSubstr("option step_size must be > 0 for kind step, got 0"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"kind", "step"}, {"step_size", "2"}, {"gamma", "x"}});
              }),
              HasSubstr("option gamma: expected a finite number, got 'x'"));
  EXPECT_THAT(
      ErrorOf([] {
        ParseScheduleOptions({{"kind", "cosine"}, {"total_steps", "10"}, {"warmup_steps", "10"}});
      }),
      HasSubstr("option total_steps must exceed warmup_steps (10) for kind cosine, got 10"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"warmup_steps", "-1"}});
              }),
              HasSubstr("option warmup_steps must be >= 0, got -1"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"warmup_start_factor", "1.5"}});
              }),
              HasSubstr("option warmup_start_factor must be in [0, 1], got 1.5"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"kind", "cosine"}, {"total_steps", "5"}, {"min_lr", "-1"}});
              }),
              HasSubstr("option min_lr must be a finite number >= 0, got -1"));
  EXPECT_THAT(ErrorOf([] {
                ParseScheduleOptions({{"warmup_steps", "1"}, {"warmupSteps", "2"}});
              }),
              HasSubstr("option 'warmup_steps' is given twice"));
  EXPECT_THAT(ErrorOf([] { LrSchedule(-0.1, ScheduleOptions{}); }),
              HasSubstr("base learning rate must be a finite number >= 0, got -0.1"));
  EXPECT_THAT(ErrorOf([] { LrSchedule(0.1, ScheduleOptions{}).LearningRate(-1); }),
              HasSubstr("step must be >= 0 (steps already taken), got -1"));
}

}  // namespace
}  // namespace autodist::optim::testing
