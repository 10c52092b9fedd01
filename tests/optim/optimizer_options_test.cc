// Parsing and validation of optimizer options: PyTorch's defaults, accepted spellings, and the
// errors for everything torch.optim rejects.
#include "runtime/optim/optimizer_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/common/error.h"
#include "runtime/optim/optimizer.h"
#include "tests/optim/optim_test_util.h"

namespace autodist::optim {
namespace {

using ::autodist::optim::testing::ErrorOf;
using ::testing::HasSubstr;

TEST(OptimizerOptionsTest, DefaultsArePyTorchs) {
  // torch.optim 1.13 signatures: Adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0),
  // AdamW(... weight_decay=1e-2), Adagrad(lr=1e-2, lr_decay=0, weight_decay=0,
  // initial_accumulator_value=0, eps=1e-10), RMSprop(lr=1e-2, alpha=0.99, eps=1e-8, ...).
  const OptimizerOptions adam = ParseOptimizerOptions("adam", {});
  EXPECT_EQ(adam.lr, 1e-3);
  EXPECT_EQ(adam.beta1, 0.9);
  EXPECT_EQ(adam.beta2, 0.999);
  EXPECT_EQ(adam.eps, 1e-8);
  EXPECT_EQ(adam.weight_decay, 0.0);
  EXPECT_FALSE(adam.amsgrad);
  EXPECT_FALSE(adam.lazy_sparse);

  const OptimizerOptions adamw = ParseOptimizerOptions("adamw", {});
  EXPECT_EQ(adamw.lr, 1e-3);
  EXPECT_EQ(adamw.weight_decay, 1e-2);

  const OptimizerOptions adagrad = ParseOptimizerOptions("adagrad", {});
  EXPECT_EQ(adagrad.lr, 1e-2);
  EXPECT_EQ(adagrad.eps, 1e-10);
  EXPECT_EQ(adagrad.lr_decay, 0.0);
  EXPECT_EQ(adagrad.initial_accumulator_value, 0.0);

  const OptimizerOptions rmsprop = ParseOptimizerOptions("rmsprop", {});
  EXPECT_EQ(rmsprop.lr, 1e-2);
  EXPECT_EQ(rmsprop.alpha, 0.99);
  EXPECT_EQ(rmsprop.eps, 1e-8);
  EXPECT_EQ(rmsprop.momentum, 0.0);
  EXPECT_FALSE(rmsprop.centered);

  const OptimizerOptions sgd = ParseOptimizerOptions("sgd", {{"lr", "0.1"}});
  EXPECT_EQ(sgd.lr, 0.1);
  EXPECT_EQ(sgd.momentum, 0.0);
  EXPECT_EQ(sgd.dampening, 0.0);
  EXPECT_FALSE(sgd.nesterov);
}

TEST(OptimizerOptionsTest, ParsesEveryOption) {
  const OptimizerOptions sgd = ParseOptimizerOptions("SGD", {{"lr", "0.5"},
                                                             {"momentum", "0.9"},
                                                             {"nesterov", "yes"},
                                                             {"weightDecay", "1e-4"},
                                                             {"lazy_sparse", "true"}});
  EXPECT_EQ(sgd.name, "sgd");
  EXPECT_EQ(sgd.lr, 0.5);
  EXPECT_EQ(sgd.momentum, 0.9);
  EXPECT_TRUE(sgd.nesterov);
  EXPECT_EQ(sgd.weight_decay, 1e-4);
  EXPECT_TRUE(sgd.lazy_sparse);

  const OptimizerOptions adam =
      ParseOptimizerOptions("Adam", {{"betas", "(0.8, 0.95)"}, {"eps", "1e-6"}, {"amsgrad", "1"}});
  EXPECT_EQ(adam.beta1, 0.8);
  EXPECT_EQ(adam.beta2, 0.95);
  EXPECT_EQ(adam.eps, 1e-6);
  EXPECT_TRUE(adam.amsgrad);

  const OptimizerOptions adamw =
      ParseOptimizerOptions("adamw", {{"beta1", "0.5"}, {"beta2", "0.75"}});
  EXPECT_EQ(adamw.beta1, 0.5);
  EXPECT_EQ(adamw.beta2, 0.75);

  const OptimizerOptions adagrad =
      ParseOptimizerOptions("adagrad", {{"lr_decay", "0.01"}, {"initialAccumulatorValue", "0.1"}});
  EXPECT_EQ(adagrad.lr_decay, 0.01);
  EXPECT_EQ(adagrad.initial_accumulator_value, 0.1);

  const OptimizerOptions rmsprop = ParseOptimizerOptions(
      "rmsprop", {{"alpha", "0.9"}, {"centered", "True"}, {"momentum", "0.5"}});
  EXPECT_EQ(rmsprop.alpha, 0.9);
  EXPECT_TRUE(rmsprop.centered);
  EXPECT_EQ(rmsprop.momentum, 0.5);
}

TEST(OptimizerOptionsTest, UnknownOptimizerListsTheValidOnes) {
  const std::string message = ErrorOf([] { ParseOptimizerOptions("lamb", {}); });
  EXPECT_THAT(message, HasSubstr("unknown optimizer 'lamb'"));
  EXPECT_THAT(message, HasSubstr("sgd, adam, adamw, adagrad, rmsprop"));
}

TEST(OptimizerOptionsTest, OptionTheOptimizerDoesNotTakeListsTheValidOnes) {
  const std::string message = ErrorOf([] { ParseOptimizerOptions("adam", {{"momentum", "0.9"}}); });
  EXPECT_THAT(message, HasSubstr("optimizer adam does not take option 'momentum'"));
  EXPECT_THAT(message, HasSubstr("lr, betas, beta1, beta2, eps, weight_decay, amsgrad"));

  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("sgd", {{"lr", "1"}, {"eps", "1e-8"}});
              }),
              HasSubstr("optimizer sgd does not take option 'eps'"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("rmsprop", {{"nesterov", "true"}});
              }),
              HasSubstr("does not take option 'nesterov'"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adagrad", {{"amsgrad", "true"}});
              }),
              HasSubstr("does not take option 'amsgrad'"));
}

TEST(OptimizerOptionsTest, MalformedValuesNameTheOption) {
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"lr", "fast"}});
              }),
              HasSubstr("option lr: expected a finite number, got 'fast'"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"lr", "1e-3x"}});
              }),
              HasSubstr("option lr: expected a finite number"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"lr", "nan"}});
              }),
              HasSubstr("option lr: expected a finite number"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"amsgrad", "maybe"}});
              }),
              HasSubstr("option amsgrad: expected true or false, got 'maybe'"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"betas", "0.9"}});
              }),
              HasSubstr("option betas: expected two numbers like '0.9,0.999', got '0.9'"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"betas", "0.9,0.99,0.999"}});
              }),
              HasSubstr("option betas: expected two numbers"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"betas", "0.9,0.99"}, {"beta1", "0.8"}});
              }),
              HasSubstr("give either betas or beta1/beta2, not both"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"weight_decay", "0"}, {"weightDecay", "1"}});
              }),
              HasSubstr("option 'weight_decay' is given twice"));
}

TEST(OptimizerOptionsTest, RangesArePyTorchs) {
  EXPECT_THAT(ErrorOf([] { ParseOptimizerOptions("sgd", {}); }),
              HasSubstr("optimizer sgd: option lr is required"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"lr", "-0.1"}});
              }),
              HasSubstr("option lr must be a finite number >= 0, got -0.1"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"betas", "0.9,1.0"}});
              }),
              HasSubstr("option beta2 must be in [0, 1), got 1"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adamw", {{"beta1", "-0.1"}});
              }),
              HasSubstr("option beta1 must be in [0, 1)"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adam", {{"eps", "-1e-8"}});
              }),
              HasSubstr("option eps must be"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adagrad", {{"weight_decay", "-1"}});
              }),
              HasSubstr("option weight_decay must be"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adagrad", {{"lr_decay", "-1"}});
              }),
              HasSubstr("option lr_decay must be"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("adagrad", {{"initial_accumulator_value", "-1"}});
              }),
              HasSubstr("option initial_accumulator_value must be"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("rmsprop", {{"alpha", "-0.5"}});
              }),
              HasSubstr("option alpha must be"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("rmsprop", {{"momentum", "-0.5"}});
              }),
              HasSubstr("option momentum must be"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("sgd", {{"lr", "1"}, {"momentum", "-1"}});
              }),
              HasSubstr("option momentum must be"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions("sgd", {{"lr", "1"}, {"nesterov", "true"}});
              }),
              HasSubstr("nesterov=true requires momentum > 0 and dampening = 0"));
  EXPECT_THAT(ErrorOf([] {
                ParseOptimizerOptions(
                    "sgd",
                    {{"lr", "1"}, {"nesterov", "true"}, {"momentum", "0.9"}, {"dampening", "0.1"}});
              }),
              HasSubstr("nesterov=true requires momentum > 0 and dampening = 0"));
}

TEST(OptimizerOptionsTest, MakeOptimizerValidatesHandBuiltOptions) {
  OptimizerOptions options;
  options.name = "adam";
  options.beta1 = 1.5;
  EXPECT_THAT(ErrorOf([&] { MakeOptimizer(options); }), HasSubstr("option beta1 must be"));
  options.name = "nadam";
  EXPECT_THAT(ErrorOf([&] { MakeOptimizer(options); }), HasSubstr("unknown optimizer 'nadam'"));
  options = OptimizerOptions{};
  options.name = "adam";
  EXPECT_NE(MakeOptimizer(options), nullptr);
}

TEST(OptimizerOptionsTest, DescribeShowsTheOptionsThatMatter) {
  EXPECT_EQ(DescribeOptimizerOptions(ParseOptimizerOptions("adam", {})),
            "adam(lr=0.001, betas=(0.9, 0.999), eps=1e-08, amsgrad=false, weight_decay=0)");
  EXPECT_EQ(DescribeOptimizerOptions(
                ParseOptimizerOptions("sgd", {{"lr", "0.1"}, {"lazy_sparse", "true"}})),
            "sgd(lr=0.1, momentum=0, dampening=0, nesterov=false, weight_decay=0, "
            "lazy_sparse=true)");
}

TEST(OptimizerOptionsTest, LearningRateSetterRejectsBadValues) {
  const auto optimizer = MakeOptimizer(ParseOptimizerOptions("adam", {}));
  optimizer->set_learning_rate(0.25);
  EXPECT_EQ(optimizer->learning_rate(), 0.25);
  EXPECT_THAT(ErrorOf([&] { optimizer->set_learning_rate(-1); }),
              HasSubstr("learning rate must be a finite number >= 0, got -1"));
  EXPECT_EQ(optimizer->learning_rate(), 0.25);
}

TEST(OptimizerOptionsTest, VariablesOnADeviceNeedItsBackendsOptimizers) {
  const OptimizerOptions options = ParseOptimizerOptions("adam", {});
  EXPECT_NE(MakeOptimizer(options, tensor::Device::Cpu()), nullptr);
  try {
    MakeOptimizer(options, tensor::Device::Cuda(0));
    FAIL() << "an optimizer for cuda:0 was made without the CUDA backend";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(error.what(), HasSubstr("optimizer adam: variables on cuda:0 need the cuda "
                                        "backend's optimizers, which this program does not have"));
  }
  // An installed factory is what a device gets.
  int made = 0;
  InstallDeviceOptimizers(tensor::DeviceKind::kCuda,
                          [&](const OptimizerOptions& o, const tensor::Device& device) {
                            ++made;
                            EXPECT_EQ(device, tensor::Device::Cuda(1));
                            return MakeOptimizer(o);
                          });
  EXPECT_NE(MakeOptimizer(options, tensor::Device::Cuda(1)), nullptr);
  EXPECT_EQ(made, 1);
  InstallDeviceOptimizers(tensor::DeviceKind::kCuda, nullptr);
}

}  // namespace
}  // namespace autodist::optim
