#include "runtime/observe/device_overlap.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist::observe {
namespace {

using autodist::testing::ErrorOf;
using ::testing::HasSubstr;

// Four groups whose gradients become ready 100 us apart, as backward computes them from the
// last layer to the first.
TEST(DeviceOverlapTest, ReductionsStartedWhileLaterGroupsWereComputedOverlapBackward) {
  const std::vector<DeviceReduction> step = {
      {"group-0", 1000, 1010, 1060},  // 50 us, all before the last ready (1300)
      {"group-1", 1100, 1110, 1160},
      {"group-2", 1200, 1210, 1350},  // 90 of its 140 us before 1300
      {"group-3", 1300, 1360, 1400},  // the last group: after backward by definition
  };
  const DeviceOverlap overlap = MeasureDeviceOverlap(step);
  EXPECT_EQ(overlap.reductions, 4);
  EXPECT_EQ(overlap.overlapped, 3);
  EXPECT_EQ(overlap.overlapped_us, 50 + 50 + 90);
  EXPECT_EQ(overlap.backward_window_us, 300);
}

TEST(DeviceOverlapTest, ReductionsThatWaitForTheEndOfBackwardDoNotOverlap) {
  // Every group ready, then reduced one after another once backward was done (a communication
  // thread that woke late, or a single fusion group).
  const std::vector<DeviceReduction> step = {
      {"group-0", 1000, 1300, 1350},
      {"group-1", 1100, 1350, 1400},
      {"group-2", 1300, 1400, 1450},
  };
  const DeviceOverlap overlap = MeasureDeviceOverlap(step);
  EXPECT_EQ(overlap.reductions, 3);
  EXPECT_EQ(overlap.overlapped, 0);
  EXPECT_EQ(overlap.overlapped_us, 0);
  EXPECT_EQ(overlap.backward_window_us, 300);
}

TEST(DeviceOverlapTest, OnlyTheTimeBeforeTheLastGroupWasReadyCounts) {
  // The order of the reductions does not matter, and a reduction that starts exactly at the
  // last ready time does not overlap.
  const std::vector<DeviceReduction> step = {
      {"group-1", 2000, 2000, 2100}, {"group-0", 1900, 1950, 2500},  // 50 us of 550 before 2000
  };
  const DeviceOverlap overlap = MeasureDeviceOverlap(step);
  EXPECT_EQ(overlap.overlapped, 1);
  EXPECT_EQ(overlap.overlapped_us, 50);
  EXPECT_EQ(overlap.backward_window_us, 100);
}

TEST(DeviceOverlapTest, AnEmptyStepOrOneGroupHasNoOverlap) {
  const DeviceOverlap none = MeasureDeviceOverlap({});
  EXPECT_EQ(none.reductions, 0);
  EXPECT_EQ(none.overlapped, 0);
  EXPECT_EQ(none.overlapped_us, 0);
  const DeviceOverlap one = MeasureDeviceOverlap({{"group-0", 10, 10, 20}});
  EXPECT_EQ(one.reductions, 1);
  EXPECT_EQ(one.overlapped, 0);
  EXPECT_EQ(one.backward_window_us, 0);
}

TEST(DeviceOverlapTest, TimesThatAreNotOneCollectivesAreRefusedNamingTheGroup) {
  const Error backwards = ErrorOf([] {
    MeasureDeviceOverlap({{"group-0", 0, 5, 6}, {"group-7", 10, 30, 20}});
  });
  EXPECT_EQ(backwards.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(backwards.what(),
              HasSubstr("device reduction 'group-7': ends at 20 us, before its start at 30 us"));
  const Error early = ErrorOf([] { MeasureDeviceOverlap({{"group-2", 50, 40, 60}}); });
  EXPECT_EQ(early.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(early.what(), HasSubstr("'group-2': starts at 40 us, before its data was ready at "
                                      "50 us"));
}

TEST(DeviceOverlapTest, StepsEndWhereAGroupComesAgain) {
  const std::vector<std::vector<DeviceReduction>> steps = SplitIntoSteps({
      {"group-1", 1100, 1110, 1120},
      {"group-0", 1000, 1010, 1020},  // out of order: sorted by ready time
      {"group-0", 2000, 2010, 2020},
      {"group-1", 2100, 2110, 2120},
      {"group-0", 3000, 3010, 3020},  // a last step cut short
  });
  ASSERT_EQ(steps.size(), 3U);
  ASSERT_EQ(steps[0].size(), 2U);
  EXPECT_EQ(steps[0][0].tag, "group-0");
  EXPECT_EQ(steps[0][1].tag, "group-1");
  EXPECT_EQ(steps[1].size(), 2U);
  EXPECT_EQ(steps[1][0].ready_us, 2000);
  ASSERT_EQ(steps[2].size(), 1U);
  EXPECT_EQ(steps[2][0].ready_us, 3000);
  EXPECT_TRUE(SplitIntoSteps({}).empty());
}

}  // namespace
}  // namespace autodist::observe
