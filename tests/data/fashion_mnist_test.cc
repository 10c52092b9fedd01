#include "runtime/data/fashion_mnist.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/data/dataset.h"
#include "runtime/data/idx_reader.h"
#include "tests/data/data_test_util.h"

namespace autodist::data {
namespace {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;
using testing::ExpectError;

bool PackageInstalled() {
  return std::filesystem::exists(std::string(kFashionMnistRoot) + "/train-labels-idx1-ubyte.gz");
}

TEST(FashionMnistTest, NamesTheFilesOfEachSplit) {
  if (!PackageInstalled()) GTEST_SKIP() << "Debian package dataset-fashion-mnist not installed";
  const auto train = FashionMnistFiles("train");
  ASSERT_EQ(train.size(), 2U);
  EXPECT_EQ(train[0],
            (std::pair<std::string, std::string>{
                "image", "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"}));
  EXPECT_EQ(train[1],
            (std::pair<std::string, std::string>{
                "label", "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"}));
  const auto test = FashionMnistFiles("test", kFashionMnistRoot);
  EXPECT_EQ(test[0].second, "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(test[1].second, "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
}

// Reads the real training labels: 60000 labels in 0..9, 6000 of each class (Fashion-MNIST is
// balanced), starting 9 0 0 3 0 2 7 2 5 5 (checked with numpy on the package file).
TEST(FashionMnistTest, ReadsTheRealTrainingLabels) {
  if (!PackageInstalled()) GTEST_SKIP() << "Debian package dataset-fashion-mnist not installed";
  const Tensor labels = ReadIdx(FashionMnistFiles("train")[1].second);
  ASSERT_EQ(labels.dtype(), DType::kUInt8);
  ASSERT_EQ(labels.shape(), (Shape{60000}));
  std::vector<int> counts(10, 0);
  for (int64_t i = 0; i < labels.numel(); ++i) {
    const uint8_t label = labels.data<uint8_t>()[i];
    ASSERT_LT(label, 10) << "label " << i;
    ++counts[label];
  }
  EXPECT_EQ(counts, std::vector<int>(10, 6000));
  const std::vector<uint8_t> first(labels.data<uint8_t>(), labels.data<uint8_t>() + 10);
  EXPECT_EQ(first, (std::vector<uint8_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
}

// The test split as a dataset: images [10000, 28, 28] become float32 rows of [1, 28, 28].
TEST(FashionMnistTest, LoadsTheTestSplitAsADataset) {
  if (!PackageInstalled()) GTEST_SKIP() << "Debian package dataset-fashion-mnist not installed";
  const Dataset dataset = Dataset::FromFiles(FashionMnistFiles("test"));
  ASSERT_EQ(dataset.size(), 10000);
  const auto feeds = dataset.Batch({0, 1}, {{"image", {1, 28, 28}}, {"label", {}}});
  EXPECT_EQ(feeds.at("image").shape(), (Shape{2, 1, 28, 28}));
  EXPECT_EQ(feeds.at("label").data<int64_t>()[0], 9);
  EXPECT_EQ(feeds.at("label").data<int64_t>()[1], 2);
  // Row 14 of the first test image holds 98 at column 12 (numpy on the package file).
  EXPECT_EQ(feeds.at("image").data<float>()[14 * 28 + 12], 98.0F / 255.0F);
}

TEST(FashionMnistTest, RejectsUnknownSplitsAndMissingFiles) {
  ExpectError([] { FashionMnistFiles("validation", kFashionMnistRoot); },
              ErrorCode::kInvalidArgument, {"split 'validation'", "'train' or 'test'"});
  ExpectError([] { FashionMnistFiles("train", "/nonexistent/fmnist"); }, ErrorCode::kNotFound,
              {"/nonexistent/fmnist/train-images-idx3-ubyte.gz", "dataset-fashion-mnist"});
}

}  // namespace
}  // namespace autodist::data
