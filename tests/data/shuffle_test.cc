#include "runtime/data/shuffle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>

#include "tests/data/data_test_util.h"

namespace autodist::data {
namespace {

bool IsPermutation(std::vector<int64_t> order) {
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Reproducibility across platforms: permutations.txt holds permutations computed by an
// independent Python implementation of MT19937-64 and the documented draw and shuffle
// (tests/fixtures/data/generate.py), so a change of algorithm, engine or draw fails here.
TEST(ShuffleTest, MatchesTheIndependentReference) {
  std::ifstream in(testing::Fixture("permutations.txt"));
  ASSERT_TRUE(in.good());
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int64_t n = 0;
    uint64_t seed = 0;
    char colon = 0;
    fields >> n >> seed >> colon;
    std::vector<int64_t> expected;
    for (int64_t value = 0; fields >> value;) expected.push_back(value);
    ASSERT_EQ(static_cast<int64_t>(expected.size()), n) << line;
    EXPECT_EQ(Permutation(n, seed), expected) << "n " << n << " seed " << seed;
    ++cases;
  }
  EXPECT_EQ(cases, 8);
}

TEST(ShuffleTest, IsAPermutationForManySizes) {
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 60000}) {
    const std::vector<int64_t> order = Permutation(n, 123);
    EXPECT_EQ(static_cast<int64_t>(order.size()), n);
    EXPECT_TRUE(IsPermutation(order)) << n;
  }
}

TEST(ShuffleTest, SameSeedSameOrderOtherSeedOtherOrder) {
  EXPECT_EQ(Permutation(1000, 5), Permutation(1000, 5));
  EXPECT_NE(Permutation(1000, 5), Permutation(1000, 6));
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(Permutation(1000, 5), identity);
}

TEST(ShuffleTest, UniformBelowStaysInRangeAndCoversIt) {
  std::mt19937_64 engine(9);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 6000; ++i) {
    const uint64_t value = UniformBelow(engine, 6);
    ASSERT_LT(value, 6U);
    ++counts[value];
  }
  // Each face within 5 standard deviations (sqrt(6000 * 1/6 * 5/6) = 28.9) of 1000.
  for (const int count : counts) EXPECT_NEAR(count, 1000, 145);
  EXPECT_EQ(UniformBelow(engine, 1), 0U);
}

TEST(ShuffleTest, EveryPositionIsEquallyLikely) {
  // Over 3000 seeds, element 0 lands at each of 3 positions about 1000 times (a biased draw such
  // as a plain modulo over a small range, or a wrong Fisher-Yates bound, would skew this).
  std::vector<int> counts(3, 0);
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    const std::vector<int64_t> order = Permutation(3, seed);
    ++counts[std::find(order.begin(), order.end(), 0) - order.begin()];
  }
  for (const int count : counts) EXPECT_NEAR(count, 1000, 130);  // 5 sigma = 129
}

}  // namespace
}  // namespace autodist::data
