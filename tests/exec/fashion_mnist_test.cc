// The example, shortened: the Fashion-MNIST MLP trained for 300 steps from Debian's data set
// package must clearly learn (the full 5-epoch run and its accuracy are in docs/performance.md).
#include "runtime/data/fashion_mnist.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/exec/trainer.h"

namespace autodist::exec {
namespace {

constexpr const char* kDataDir = "/usr/share/datasets/fashion-mnist";

TEST(FashionMnistTest, MlpLearnsInAShortRun) {
  if (!std::filesystem::exists(std::string(kDataDir) + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  }
  TrainerOptions options;
  options.model = std::string(AUTODIST_SOURCE_DIR) + "/examples/fashion-mnist/fmnist_mlp.onnx";
  options.train_files = data::FashionMnistFiles("train", kDataDir);
  options.eval_files = data::FashionMnistFiles("test", kDataDir);
  options.steps = 300;
  options.batch_size = 64;
  options.log_every = 100;
  options.optimizer = optim::ParseOptimizerOptions("adam", {{"lr", "0.001"}});
  const TrainResult result = Train(options, [](const std::string&) {});
  ASSERT_TRUE(result.eval.has_value());
  ASSERT_TRUE(result.eval->accuracy.has_value());
  EXPECT_EQ(result.eval->samples, 10000);
  // Chance is 0.10; 300 steps of Adam reach about 0.80 (threshold leaves room for noise).
  EXPECT_GT(*result.eval->accuracy, 0.75);
  EXPECT_LT(result.eval->loss, 0.7);
}

}  // namespace
}  // namespace autodist::exec
