// Top-k selection shared by the TopK compressor and TopK-compressed pushes: the count, the
// largest magnitudes in ascending index order, ties to the lower index, NaN first.
#include "runtime/compress/top_k.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace autodist::compress {
namespace {

TEST(TopKTest, CountIsTheCeilingWithoutRoundingUpExactProducts) {
  EXPECT_EQ(TopKCount(0.1, 320), 32);  // 0.1 * 320 is 32.000000000000004 in double
  EXPECT_EQ(TopKCount(0.1, 321), 33);
  EXPECT_EQ(TopKCount(0.01, 10), 1);
  EXPECT_EQ(TopKCount(1.0, 7), 7);
  EXPECT_EQ(TopKCount(0.5, 0), 0);
}

TEST(TopKTest, PicksTheLargestMagnitudesInIndexOrder) {
  const std::vector<float> values = {0.5F, -3.0F, 1.0F, 2.0F, -0.25F, 4.0F};
  std::vector<int64_t> indices;
  SelectLargest(values.data(), 6, 3, indices);
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 3, 5}));
  SelectLargest(values.data(), 6, 0, indices);
  EXPECT_TRUE(indices.empty());
  SelectLargest(values.data(), 6, 6, indices);
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(TopKTest, TiesGoToTheLowerIndexAndNaNRanksFirst) {
  const std::vector<float> ties = {1.0F, -1.0F, 1.0F, 1.0F};
  std::vector<int64_t> indices;
  SelectLargest(ties.data(), 4, 2, indices);
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 1}));
  const std::vector<float> broken = {5.0F, std::numeric_limits<float>::quiet_NaN(), 7.0F};
  SelectLargest(broken.data(), 3, 1, indices);
  EXPECT_EQ(indices, (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace autodist::compress
