#include "runtime/sync/shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "runtime/common/error.h"

namespace autodist::sync {
namespace {

using tensor::DType;
using tensor::Tensor;

Tensor Iota(tensor::Shape shape) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::iota(t.data<float>(), t.data<float>() + t.numel(), 0.0F);
  return t;
}

std::vector<float> Values(const Tensor& t) {
  return {t.data<float>(), t.data<float>() + t.numel()};
}

TEST(ShardTest, SliceAlongAxisZeroTakesRows) {
  const Tensor whole = Iota({4, 3});
  const Tensor part = Slice(whole, ShardRange{0, 1, 2});
  EXPECT_EQ(part.shape(), (tensor::Shape{2, 3}));
  EXPECT_THAT(Values(part), ::testing::ElementsAre(3, 4, 5, 6, 7, 8));
}

TEST(ShardTest, SliceAlongInnerAxisTakesColumns) {
  const Tensor whole = Iota({2, 5});
  const Tensor part = Slice(whole, ShardRange{1, 3, 2});
  EXPECT_EQ(part.shape(), (tensor::Shape{2, 2}));
  EXPECT_THAT(Values(part), ::testing::ElementsAre(3, 4, 8, 9));
}

TEST(ShardTest, ShardsWrittenBackRebuildTheVariable) {
  const Tensor whole = Iota({3, 7, 2});
  Tensor rebuilt = Tensor::Zeros(DType::kFloat32, {3, 7, 2});
  // Uneven shards along the middle axis: 3 + 2 + 2.
  const ShardRange ranges[] = {{1, 0, 3}, {1, 3, 2}, {1, 5, 2}};
  for (const ShardRange& range : ranges) WriteSlice(rebuilt, Slice(whole, range), range, "test");
  EXPECT_EQ(Values(rebuilt), Values(whole));
}

TEST(ShardTest, WholeRangeCoversScalarsAndVectors) {
  const Tensor scalar = Tensor::Scalar(2.5F);
  EXPECT_EQ(Values(Slice(scalar, ShardRange::Whole({}))), std::vector<float>{2.5F});
  EXPECT_EQ(ShardRange::Whole({6}).extent, 6);
}

TEST(ShardTest, WriteSliceRejectsAWrongShapeNamingIt) {
  Tensor whole = Iota({4, 3});
  try {
    WriteSlice(whole, Iota({3, 3}), ShardRange{0, 0, 2}, "parameter server ps-0: 'w/part_0:0'");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("'w/part_0:0'"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("shape [2, 3]"));
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_THROW(Slice(whole, ShardRange{0, 3, 2}), Error);  // past the end
}

tensor::SparseGradient Rows(std::vector<int64_t> indices, int64_t width, tensor::Shape dense) {
  tensor::SparseGradient g;
  const auto n = static_cast<int64_t>(indices.size());
  g.indices = Tensor::FromVector<int64_t>({n}, indices);
  g.values = Iota({n, width});
  g.dense_shape = std::move(dense);
  return g;
}

TEST(ShardTest, ChangedRowsGoIntoTheirShardOfTheVariable) {
  // Rows 0 and 2 of the shard [4, 8) of an [8, 2] variable: variable rows 4 and 6.
  Tensor whole = Tensor::Zeros(DType::kFloat32, {8, 2});
  WriteRows(whole, Rows({0, 2}, 2, {4, 2}), ShardRange{0, 4, 4}, "test");
  EXPECT_THAT(Values(whole),
              ::testing::ElementsAre(0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 3, 0, 0));
  // The whole variable, and no rows at all.
  WriteRows(whole, Rows({7}, 2, {8, 2}), ShardRange::Whole({8, 2}), "test");
  EXPECT_EQ(Values(whole)[14], 0);
  EXPECT_EQ(Values(whole)[15], 1);
  WriteRows(whole, Rows({}, 2, {8, 2}), ShardRange::Whole({8, 2}), "test");
  EXPECT_EQ(Values(whole)[15], 1);
}

TEST(ShardTest, ChangedRowsThatDoNotFitAreRejectedNamingThePeer) {
  Tensor whole = Tensor::Zeros(DType::kFloat32, {8, 2});
  const Tensor before = whole.Clone();
  const auto error = [&](const tensor::SparseGradient& rows, const ShardRange& range) {
    try {
      WriteRows(whole, rows, range, "parameter server ps-0: rows of 'emb'");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(Rows({4}, 2, {4, 2}), ShardRange{0, 4, 4}),
              ::testing::HasSubstr("ps-0: rows of 'emb': row 4 is outside the shard's 4 rows"));
  EXPECT_THAT(error(Rows({-1}, 2, {4, 2}), ShardRange{0, 4, 4}),
              ::testing::HasSubstr("row -1 is outside"));
  EXPECT_THAT(error(Rows({1}, 3, {8, 3}), ShardRange::Whole({8, 2})),
              ::testing::HasSubstr("expected float32 rows of shape [1, 2]"));
  EXPECT_THAT(error(Rows({1}, 1, {8, 1}), ShardRange{1, 0, 1}),
              ::testing::HasSubstr("only shards along axis 0 take rows"));
  EXPECT_EQ(Values(whole), Values(before));
}

TEST(ShardTest, SparseRowsGoToTheirShardRebased) {
  const tensor::SparseGradient g = Rows({0, 2, 5, 6}, 2, {8, 2});
  const tensor::SparseGradient first = SliceSparse(g, ShardRange{0, 0, 4});
  const tensor::SparseGradient second = SliceSparse(g, ShardRange{0, 4, 4});
  EXPECT_THAT(first.indices.ToInt64Vector("t"), ::testing::ElementsAre(0, 2));
  EXPECT_THAT(Values(first.values), ::testing::ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(second.indices.ToInt64Vector("t"), ::testing::ElementsAre(1, 2));
  EXPECT_THAT(Values(second.values), ::testing::ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(second.dense_shape, (tensor::Shape{4, 2}));
}

TEST(ShardTest, SparseShardWithoutRowsIsEmpty) {
  const tensor::SparseGradient g = Rows({0, 1}, 3, {9, 3});
  const tensor::SparseGradient empty = SliceSparse(g, ShardRange{0, 5, 4});
  EXPECT_EQ(empty.indices.numel(), 0);
  EXPECT_EQ(empty.values.shape(), (tensor::Shape{0, 3}));
}

TEST(ShardTest, SparseAlongInnerAxisCutsEveryRow) {
  const tensor::SparseGradient g = Rows({1, 3}, 4, {5, 4});
  const tensor::SparseGradient part = SliceSparse(g, ShardRange{1, 2, 2});
  EXPECT_THAT(part.indices.ToInt64Vector("t"), ::testing::ElementsAre(1, 3));
  EXPECT_THAT(Values(part.values), ::testing::ElementsAre(2, 3, 6, 7));
  EXPECT_EQ(part.dense_shape, (tensor::Shape{5, 2}));
}

}  // namespace
}  // namespace autodist::sync
