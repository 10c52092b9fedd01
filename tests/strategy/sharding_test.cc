#include "runtime/strategy/sharding.h"

#include <gtest/gtest.h>

#include "runtime/common/error.h"

namespace autodist::strategy {
namespace {

TEST(ShardingTest, SmallestDivisorFollowsAutoDist) {
  EXPECT_EQ(SmallestDivisorShards(0), 1);
  EXPECT_EQ(SmallestDivisorShards(1), 1);
  EXPECT_EQ(SmallestDivisorShards(2), 2);  // no divisor in [2, 2): dim itself
  EXPECT_EQ(SmallestDivisorShards(6), 2);
  EXPECT_EQ(SmallestDivisorShards(9), 3);
  EXPECT_EQ(SmallestDivisorShards(49), 7);
  EXPECT_EQ(SmallestDivisorShards(7), 7);  // prime: one shard per row
  EXPECT_EQ(SmallestDivisorShards(1009), 1009);
  EXPECT_EQ(SmallestDivisorShards(784), 2);
}

TEST(ShardingTest, SmallestNonDivisorFollowsAutoDist) {
  EXPECT_EQ(SmallestNonDivisorShards(1), 1);
  EXPECT_EQ(SmallestNonDivisorShards(2), 2);  // no i in [2, 2): dim itself
  EXPECT_EQ(SmallestNonDivisorShards(3), 2);
  EXPECT_EQ(SmallestNonDivisorShards(6), 4);
  EXPECT_EQ(SmallestNonDivisorShards(12), 5);
  EXPECT_EQ(SmallestNonDivisorShards(60), 7);
  EXPECT_EQ(SmallestNonDivisorShards(256), 3);
}

TEST(ShardingTest, PartitionerStringPutsShardsAtTheAxis) {
  EXPECT_EQ(PartitionerString(2, 0, 4), "4,1");
  EXPECT_EQ(PartitionerString(3, 1, 2), "1,2,1");
  EXPECT_EQ(PartitionerString(1, 0, 7), "7");
}

TEST(ShardingTest, ParsePartitionerAcceptsWellFormedStrings) {
  EXPECT_EQ(ParsePartitioner("4,1", {8, 3}, "w"), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(ParsePartitioner("1,3", {8, 3}, "w"), (std::vector<int64_t>{1, 3}));
}

TEST(ShardingTest, ParsePartitionerRejectsMalformedStrings) {
  EXPECT_THROW(ParsePartitioner("", {8}, "w"), Error);
  EXPECT_THROW(ParsePartitioner("4,", {8, 2}, "w"), Error);
  EXPECT_THROW(ParsePartitioner("x,1", {8, 2}, "w"), Error);
  EXPECT_THROW(ParsePartitioner("0,1", {8, 2}, "w"), Error);
  EXPECT_THROW(ParsePartitioner("4", {8, 2}, "w"), Error);    // rank mismatch
  EXPECT_THROW(ParsePartitioner("9,1", {8, 2}, "w"), Error);  // more shards than rows
  EXPECT_THROW(ParsePartitioner("2,2", {8, 2}, "w"), Error);  // two axes
  try {
    ParsePartitioner("4", {8, 2}, "dense/kernel");
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("dense/kernel"), std::string::npos);
  }
}

TEST(ShardingTest, ShardExtentGivesRemainderToTheFirstShards) {
  EXPECT_EQ(ShardExtent(6, 4, 0), 2);
  EXPECT_EQ(ShardExtent(6, 4, 1), 2);
  EXPECT_EQ(ShardExtent(6, 4, 2), 1);
  EXPECT_EQ(ShardExtent(6, 4, 3), 1);
  EXPECT_EQ(ShardExtent(8, 2, 1), 4);
}

TEST(ShardingTest, PartNamesFollowAutoDist) {
  EXPECT_EQ(PartName("fc1.weight", 3), "fc1.weight/part_3:0");
}

}  // namespace
}  // namespace autodist::strategy
