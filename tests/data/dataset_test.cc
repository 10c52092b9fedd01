#include "runtime/data/dataset.h"

#include <gtest/gtest.h>

#include "runtime/data/fashion_mnist.h"
#include "tests/data/data_test_util.h"

namespace autodist::data {
namespace {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;
using testing::ExpectError;
using testing::Fixture;
using testing::Values;

// 3 images of 2x2 pixels and their labels.
Dataset Small(NormalizeOptions normalize = {}) {
  return Dataset::FromColumns(
      {{"image",
        Tensor::FromVector<uint8_t>({3, 2, 2}, {0, 255, 51, 102, 1, 2, 3, 4, 255, 255, 0, 0}),
        "images.idx"},
       {"label", Tensor::FromVector<uint8_t>({3}, {9, 0, 3}), "labels.idx"}},
      normalize);
}

TEST(DatasetTest, BatchGathersRowsInOrderAndConverts) {
  const Dataset dataset = Small();
  EXPECT_EQ(dataset.size(), 3);
  const auto feeds = dataset.Batch({2, 0}, {});
  const Tensor& image = feeds.at("image");
  EXPECT_EQ(image.dtype(), DType::kFloat32);
  EXPECT_EQ(image.shape(), (Shape{2, 2, 2}));
  // x / 255 in float32, as torchvision's ToTensor: 51 / 255 = 0.2, 102 / 255 = 0.4.
  EXPECT_EQ(Values<float>(image), (std::vector<float>{1.0F, 1.0F, 0.0F, 0.0F, 0.0F, 1.0F,
                                                      51.0F / 255.0F, 102.0F / 255.0F}));
  const Tensor& label = feeds.at("label");
  EXPECT_EQ(label.dtype(), DType::kInt64);  // uint8 labels (rank 1) become int64
  EXPECT_EQ(label.shape(), (Shape{2}));
  EXPECT_EQ(Values<int64_t>(label), (std::vector<int64_t>{3, 9}));
  // Rows may repeat (DistributedSampler padding) and a batch may be empty.
  EXPECT_EQ(Values<int64_t>(dataset.Batch({1, 1}, {}).at("label")), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(dataset.Batch({}, {}).at("image").shape(), (Shape{0, 2, 2}));
}

TEST(DatasetTest, NormalizesImagesLikeTorchvision) {
  // Fashion-MNIST's usual constants. Expected values from PyTorch 1.13 at development time, with
  // the operations of torchvision's ToTensor (float().div(255)) and Normalize (sub_, div_):
  //   torch.tensor([0, 255, 51, 102], dtype=torch.uint8).float().div(255).sub(0.2860)
  //       .div(0.3530).tolist()
  const Dataset dataset = Small({.mean = 0.2860F, .std = 0.3530F});
  const auto image = dataset.Batch({0}, {}).at("image");
  const std::vector<float> expected = {-0.8101983666419983F, 2.022662878036499F,
                                       -0.24362610280513763F, 0.322946161031723F};
  EXPECT_EQ(Values<float>(image), expected);  // bit-exact: same float32 operations
  // Labels are never normalized.
  EXPECT_EQ(Values<int64_t>(dataset.Batch({0}, {}).at("label")), (std::vector<int64_t>{9}));
  // Only a mean: std 1.
  const auto shifted = Small({.mean = 0.5F, .std = {}}).Batch({0}, {}).at("image");
  EXPECT_EQ(shifted.data<float>()[1], 0.5F);
}

TEST(DatasetTest, ConvertsOtherElementTypes) {
  const Dataset dataset = Dataset::FromColumns({
      {"f32", Tensor::FromVector<float>({2, 2}, {0.5F, 1.5F, 2.5F, 3.5F}), "a.npy"},
      {"f64", Tensor::FromVector<double>({2}, {0.1, -2.0}), "b.npy"},
      {"i8", Tensor::FromVector<int8_t>({2}, {-3, 4}), "c.npy"},
      {"i32", Tensor::FromVector<int32_t>({2}, {-70000, 5}), "d.npy"},
      {"i64", Tensor::FromVector<int64_t>({2, 1}, {int64_t{1} << 40, 6}), "e.npy"},
      {"mask", Tensor::FromVector<bool>({2}, {true, false}), "f.npy"},
  });
  const auto feeds = dataset.Batch({1, 0}, {});
  EXPECT_EQ(Values<float>(feeds.at("f32")), (std::vector<float>{2.5F, 3.5F, 0.5F, 1.5F}));
  EXPECT_EQ(feeds.at("f64").dtype(), DType::kFloat32);  // the engine computes in float32
  EXPECT_EQ(Values<float>(feeds.at("f64")), (std::vector<float>{-2.0F, static_cast<float>(0.1)}));
  EXPECT_EQ(Values<int64_t>(feeds.at("i8")), (std::vector<int64_t>{4, -3}));
  EXPECT_EQ(Values<int64_t>(feeds.at("i32")), (std::vector<int64_t>{5, -70000}));
  EXPECT_EQ(Values<int64_t>(feeds.at("i64")), (std::vector<int64_t>{6, int64_t{1} << 40}));
  EXPECT_EQ(feeds.at("i64").shape(), (Shape{2, 1}));
  EXPECT_EQ(Values<bool>(feeds.at("mask")), (std::vector<bool>{false, true}));
}

TEST(DatasetTest, ReshapesRowsToTheDeclaredShape) {
  const Dataset dataset = Small();
  // [2, 2] rows feed an input declared [1, 2, 2] (a channel axis), labels declared [] stay.
  auto feeds = dataset.Batch({0, 1}, {{"image", {1, 2, 2}}, {"label", {}}});
  EXPECT_EQ(feeds.at("image").shape(), (Shape{2, 1, 2, 2}));
  EXPECT_EQ(feeds.at("label").shape(), (Shape{2}));
  // One unknown dimension is inferred; same-rank declarations with unknowns keep the row shape.
  EXPECT_EQ(dataset.FeedRowShapes({{"image", {-1}}}).at("image"), (Shape{4}));
  EXPECT_EQ(dataset.FeedRowShapes({{"image", {1, -1, 2}}}).at("image"), (Shape{1, 2, 2}));
  EXPECT_EQ(dataset.FeedRowShapes({{"image", {-1, -1}}}).at("image"), (Shape{2, 2}));
  EXPECT_EQ(dataset.FeedRowShapes({{"image", {4, 1}}}).at("image"), (Shape{4, 1}));
  // Entries for inputs the dataset does not feed are ignored.
  EXPECT_EQ(dataset.FeedRowShapes({{"mask", {7}}}).size(), 2U);
}

TEST(DatasetTest, RejectsRowShapesThatCannotHoldARow) {
  const Dataset dataset = Small();
  ExpectError(
      [&] {
        dataset.Batch({0}, {{"image", {1, 28, 28}}});
      },
      ErrorCode::kInvalidArgument,
      {"input 'image' expects rows of shape [1, 28, 28] but 'images.idx' has rows of "
       "shape [2, 2] (4 values)"});
  // Two unknown dims of another rank are ambiguous; an unknown dim that cannot divide evenly.
  ExpectError(
      [&] {
        dataset.FeedRowShapes({{"image", {-1, -1, 1}}});
      },
      ErrorCode::kInvalidArgument, {"input 'image' expects rows of shape [-1, -1, 1]"});
  ExpectError(
      [&] {
        dataset.FeedRowShapes({{"image", {3, -1}}});
      },
      ErrorCode::kInvalidArgument, {"[3, -1]", "(4 values)"});
  ExpectError(
      [&] {
        dataset.FeedRowShapes({{"label", {2}}});
      },
      ErrorCode::kInvalidArgument,
      {"input 'label' expects rows of shape [2] but 'labels.idx' has rows of shape [] "
       "(1 values)"});
}

TEST(DatasetTest, RejectsRowsOutsideTheDataset) {
  const Dataset dataset = Small();
  ExpectError(
      [&] {
        dataset.Batch({0, 3}, {});
      },
      ErrorCode::kInvalidArgument, {"row 3 is outside the dataset of 3 rows"});
  ExpectError([&] { dataset.Batch({-1}, {}); }, ErrorCode::kInvalidArgument, {"row -1"});
}

TEST(DatasetTest, RejectsMismatchedRowCountsNamingBothFiles) {
  ExpectError(
      [] {
        Dataset::FromColumns({{"image", Tensor::Zeros(DType::kUInt8, {60000, 28, 28}), "a.gz"},
                              {"label", Tensor::Zeros(DType::kUInt8, {10000}), "b.gz"}});
      },
      ErrorCode::kInvalidArgument, {"'a.gz' (image) has 60000 rows but 'b.gz' (label) has 10000"});
}

TEST(DatasetTest, RejectsBadColumnsAndOptions) {
  ExpectError([] { Dataset::FromColumns({}); }, ErrorCode::kInvalidArgument,
              {"at least one column"});
  ExpectError(
      [] {
        Dataset::FromColumns({{"x", Tensor::Scalar(1.0F), "s.npy"}});
      },
      ErrorCode::kInvalidArgument, {"column 'x' from 's.npy' is a scalar"});
  ExpectError(
      [] {
        Dataset::FromColumns({{"x", Tensor(), "u.npy"}});
      },
      ErrorCode::kInvalidArgument, {"column 'x' from 'u.npy' has no array"});
  ExpectError(
      [] {
        Dataset::FromColumns({{"x", Tensor::Zeros(DType::kFloat32, {2}), "a.npy"},
                              {"x", Tensor::Zeros(DType::kFloat32, {2}), "b.npy"}});
      },
      ErrorCode::kInvalidArgument, {"two dataset columns feed input 'x'", "b.npy"});
  ExpectError([] { Small({.mean = {}, .std = 0.0F}); }, ErrorCode::kInvalidArgument,
              {"std must be positive"});
  ExpectError([] { Small({.mean = {}, .std = -1.0F}); }, ErrorCode::kInvalidArgument,
              {"std must be positive"});
}

TEST(DatasetTest, FromFilesReadsEachColumn) {
  const Dataset dataset = Dataset::FromFiles(
      {{"image", Fixture("images-idx3-ubyte.gz")}, {"label", Fixture("labels-idx1-ubyte.gz")}});
  EXPECT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.columns().at(1).source, Fixture("labels-idx1-ubyte.gz"));
  EXPECT_EQ(Values<int64_t>(dataset.Batch({0, 1, 2}, {}).at("label")),
            (std::vector<int64_t>{9, 0, 3}));
  ExpectError(
      [] {
        Dataset::FromFiles(
            {{"image", Fixture("images-idx3-ubyte.gz")}, {"label", Fixture("u8.idx")}});
      },
      ErrorCode::kInvalidArgument, {"has 3 rows but", "u8.idx' (label) has 2"});
}

}  // namespace
}  // namespace autodist::data
