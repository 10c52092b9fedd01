#include "runtime/data/sampler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <sstream>

#include "runtime/data/shuffle.h"
#include "tests/data/data_test_util.h"

namespace autodist::data {
namespace {

std::vector<int64_t> Identity(int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// By hand, DistributedSampler with 10 rows over 4 ranks: num_samples = ceil(10 / 4) = 3, total
// 12, so the order is padded with its first 2 entries: [o0..o9, o0, o1]; rank r takes positions
// r, r + 4, r + 8. With drop_last, num_samples = 2 and the order is cut to 8.
TEST(SamplerTest, PadsLikeDistributedSamplerByHand) {
  const std::vector<int64_t> order = {7, 2, 0, 8, 3, 9, 6, 1, 5, 4};
  EXPECT_EQ(ShardSize(10, 4, false), 3);
  EXPECT_EQ(Shard(order, 0, 4, false), (std::vector<int64_t>{7, 3, 5}));
  EXPECT_EQ(Shard(order, 1, 4, false), (std::vector<int64_t>{2, 9, 4}));
  EXPECT_EQ(Shard(order, 2, 4, false), (std::vector<int64_t>{0, 6, 7}));  // o8, then pad o0
  EXPECT_EQ(Shard(order, 3, 4, false), (std::vector<int64_t>{8, 1, 2}));  // pad o1
  EXPECT_EQ(ShardSize(10, 4, true), 2);
  EXPECT_EQ(Shard(order, 0, 4, true), (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(Shard(order, 3, 4, true), (std::vector<int64_t>{8, 1}));
  // 2 rows over 5 ranks: the padding repeats the order more than once: [o0, o1, o0, o1, o0].
  EXPECT_EQ(Shard({4, 9}, 2, 5, false), (std::vector<int64_t>{4}));
  EXPECT_EQ(Shard({4, 9}, 3, 5, false), (std::vector<int64_t>{9}));
  EXPECT_EQ(Shard({4, 9}, 4, 5, false), (std::vector<int64_t>{4}));
  EXPECT_EQ(Shard({4, 9}, 4, 5, true), (std::vector<int64_t>{}));
}

// distributed_sampler.txt holds the indices of torch.utils.data.DistributedSampler (PyTorch 1.13,
// shuffle=False, so over the identity order) for several sizes, world sizes and drop_last.
TEST(SamplerTest, MatchesPyTorchDistributedSampler) {
  std::ifstream in(testing::Fixture("distributed_sampler.txt"));
  ASSERT_TRUE(in.good());
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int64_t n = 0;
    int world = 0;
    int drop_last = 0;
    int rank = 0;
    char colon = 0;
    fields >> n >> world >> drop_last >> rank >> colon;
    std::vector<int64_t> expected;
    for (int64_t value = 0; fields >> value;) expected.push_back(value);
    EXPECT_EQ(Shard(Identity(n), rank, world, drop_last == 1), expected) << line;
    EXPECT_EQ(ShardSize(n, world, drop_last == 1), static_cast<int64_t>(expected.size())) << line;
    ++cases;
  }
  EXPECT_EQ(cases, 60);
}

TEST(SamplerTest, RanksCoverTheDataExactlyOnce) {
  // 12 rows over 4 ranks divide evenly: every row exactly once, padding or not.
  const std::vector<int64_t> order = Permutation(12, 3);
  for (const bool drop_last : {false, true}) {
    std::vector<int> seen(12, 0);
    for (int rank = 0; rank < 4; ++rank) {
      for (const int64_t row : Shard(order, rank, 4, drop_last)) ++seen[static_cast<size_t>(row)];
    }
    EXPECT_EQ(seen, std::vector<int>(12, 1));
  }
  // 13 rows over 4 ranks: padding repeats the first 3 rows of the order; drop_last skips the
  // last row of the order.
  const std::vector<int64_t> odd = Permutation(13, 3);
  std::vector<int> padded(13, 0);
  std::vector<int> dropped(13, 0);
  for (int rank = 0; rank < 4; ++rank) {
    for (const int64_t row : Shard(odd, rank, 4, false)) ++padded[static_cast<size_t>(row)];
    for (const int64_t row : Shard(odd, rank, 4, true)) ++dropped[static_cast<size_t>(row)];
  }
  for (size_t i = 0; i < 13; ++i) {
    EXPECT_EQ(padded[static_cast<size_t>(odd[i])], i < 3 ? 2 : 1) << i;
    EXPECT_EQ(dropped[static_cast<size_t>(odd[i])], i < 12 ? 1 : 0) << i;
  }
}

TEST(SamplerTest, EpochOrderShufflesPerEpoch) {
  EXPECT_EQ(EpochOrder(5, 3, false, 99), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(EpochOrder(100, 0, true, 10), Permutation(100, 10));
  EXPECT_EQ(EpochOrder(100, 2, true, 10), Permutation(100, 12));  // seed + epoch
  EXPECT_NE(EpochOrder(100, 1, true, 10), EpochOrder(100, 2, true, 10));
  // seed + epoch wraps around 2^64.
  EXPECT_EQ(EpochOrder(10, 1, true, UINT64_MAX), Permutation(10, 0));
}

}  // namespace
}  // namespace autodist::data
