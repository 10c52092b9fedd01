// Optimizer state for checkpoints: the slots each optimizer saves, bit-identical continuation
// after SaveState/LoadState, and clear errors for state that does not fit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/optim/optimizer.h"
#include "tests/optim/optim_test_util.h"

namespace autodist::optim {
namespace {

using ::autodist::optim::testing::ErrorOf;
using tensor::DType;
using tensor::Tensor;
using ::testing::HasSubstr;
using Options = std::map<std::string, std::string>;
using State = std::map<std::string, Tensor>;

std::unique_ptr<Optimizer> Make(const std::string& name, const Options& options) {
  return MakeOptimizer(ParseOptimizerOptions(name, options));
}

Tensor Random(std::mt19937& rng, tensor::Shape shape) {
  std::normal_distribution<float> normal(0.0F, 1.0F);
  Tensor out(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = normal(rng);
  return out;
}

bool BitIdentical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

std::set<std::string> Keys(const State& state) {
  std::set<std::string> keys;
  for (const auto& [key, value] : state) keys.insert(key);
  return keys;
}

struct StateCase {
  std::string name;
  Options options;
  std::set<std::string> slots;  // of variable "layer/0/w"
};

class CheckpointTest : public ::testing::TestWithParam<StateCase> {};

TEST_P(CheckpointTest, SaveLoadContinuesBitIdentically) {
  const StateCase& c = GetParam();
  std::mt19937 rng(5);
  // A variable name with '/' in it: the slot is what follows the last '/'.
  const std::string name = "layer/0/w";
  Tensor uninterrupted = Random(rng, {3, 4});
  std::vector<Tensor> grads;
  grads.reserve(6);
  for (int i = 0; i < 6; ++i) grads.push_back(Random(rng, {3, 4}));

  const auto first = Make(c.name, c.options);
  for (int i = 0; i < 3; ++i) first->Apply(name, uninterrupted, grads[static_cast<size_t>(i)]);
  Tensor resumed = uninterrupted.Clone();
  const State saved = first->SaveState();
  std::set<std::string> expected_keys;
  for (const std::string& slot : c.slots)
    expected_keys.insert(std::string(name).append("/").append(slot));
  EXPECT_EQ(Keys(saved), expected_keys);
  if (saved.contains(name + "/step")) {
    const Tensor& step = saved.at(name + "/step");
    EXPECT_EQ(step.dtype(), DType::kInt64);
    EXPECT_EQ(step.rank(), 0U);
    EXPECT_EQ(step.data<int64_t>()[0], 3);
  }

  const auto second = Make(c.name, c.options);
  second->LoadState(saved);
  for (int i = 3; i < 6; ++i) {
    first->Apply(name, uninterrupted, grads[static_cast<size_t>(i)]);
    second->Apply(name, resumed, grads[static_cast<size_t>(i)]);
    ASSERT_TRUE(BitIdentical(uninterrupted, resumed)) << "step " << i + 1;
  }
  const State end_first = first->SaveState();
  const State end_second = second->SaveState();
  ASSERT_EQ(Keys(end_first), Keys(end_second));
  for (const auto& [key, value] : end_first) EXPECT_TRUE(BitIdentical(value, end_second.at(key)));
}

INSTANTIATE_TEST_SUITE_P(
    AllOptimizers, CheckpointTest,
    ::testing::Values(StateCase{"sgd", {{"lr", "0.1"}}, {}},
                      StateCase{"sgd", {{"lr", "0.1"}, {"momentum", "0.9"}}, {"momentum_buffer"}},
                      StateCase{"adam", {}, {"step", "exp_avg", "exp_avg_sq"}},
                      StateCase{"adam",
                                {{"amsgrad", "true"}},
                                {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}},
                      StateCase{"adamw", {}, {"step", "exp_avg", "exp_avg_sq"}},
                      StateCase{"adagrad", {{"lr_decay", "0.1"}}, {"step", "sum"}},
                      StateCase{"rmsprop", {}, {"step", "square_avg"}},
                      StateCase{"rmsprop",
                                {{"momentum", "0.9"}, {"centered", "true"}},
                                {"step", "square_avg", "momentum_buffer", "grad_avg"}}),
    [](const ::testing::TestParamInfo<StateCase>& param_info) {
      return param_info.param.name + std::to_string(param_info.index);
    });

TEST(StateTest, SavedAndLoadedStateAreCopies) {
  const auto adam = Make("adam", {});
  Tensor p = Tensor::FromVector<float>({2}, {1, 2});
  adam->Apply("w", p, Tensor::FromVector<float>({2}, {1, 1}));
  State saved = adam->SaveState();
  const float exp_avg = saved.at("w/exp_avg").data<float>()[0];
  saved.at("w/exp_avg").data<float>()[0] = 100.0F;  // the caller's copy, not the optimizer's
  EXPECT_EQ(adam->SaveState().at("w/exp_avg").data<float>()[0], exp_avg);

  const auto other = Make("adam", {});
  other->LoadState(saved);
  saved.at("w/exp_avg").data<float>()[0] = -7.0F;
  EXPECT_EQ(other->SaveState().at("w/exp_avg").data<float>()[0], 100.0F);
}

// A valid Adam state for variable "w" of shape [2] after one step.
State AdamState() {
  const auto adam = Make("adam", {});
  Tensor p = Tensor::FromVector<float>({2}, {1, 2});
  adam->Apply("w", p, Tensor::FromVector<float>({2}, {0.5F, -0.5F}));
  return adam->SaveState();
}

TEST(StateTest, MissingSlotIsNamed) {
  State state = AdamState();
  state.erase("w/exp_avg_sq");
  const auto adam = Make("adam", {});
  EXPECT_THAT(ErrorOf([&] { adam->LoadState(state); }),
              HasSubstr("state for variable 'w' lacks slot 'exp_avg_sq' (slots: step, exp_avg, "
                        "exp_avg_sq)"));
  // amsgrad keeps one more slot than plain Adam saved.
  const auto amsgrad = Make("adam", {{"amsgrad", "true"}});
  EXPECT_THAT(ErrorOf([&] { amsgrad->LoadState(AdamState()); }),
              HasSubstr("lacks slot 'max_exp_avg_sq'"));
  State no_step = AdamState();
  no_step.erase("w/step");
  EXPECT_THAT(ErrorOf([&] { adam->LoadState(no_step); }), HasSubstr("lacks slot 'step'"));
}

TEST(StateTest, SlotOfAnotherOptimizerIsRejected) {
  const auto sgd = Make("sgd", {{"lr", "0.1"}, {"momentum", "0.9"}});
  Tensor p = Tensor::FromVector<float>({2}, {1, 2});
  sgd->Apply("w", p, Tensor::FromVector<float>({2}, {1, 1}));
  const auto adam = Make("adam", {});
  const std::string message = ErrorOf([&] { adam->LoadState(sgd->SaveState()); });
  EXPECT_THAT(message, HasSubstr("state 'w/momentum_buffer' has slot 'momentum_buffer', which "
                                 "adam(lr=0.001"));
  EXPECT_THAT(message, HasSubstr("its slots: step, exp_avg, exp_avg_sq"));

  const auto plain_sgd = Make("sgd", {{"lr", "0.1"}});
  EXPECT_THAT(ErrorOf([&] { plain_sgd->LoadState(AdamState()); }),
              HasSubstr("optimizer sgd keeps no state with these options"));
  EXPECT_NO_THROW(plain_sgd->LoadState({}));
}

TEST(StateTest, MalformedStateIsRejected) {
  const auto adam = Make("adam", {});
  State no_slot = AdamState();
  no_slot["w"] = Tensor::Scalar(1.0F);
  EXPECT_THAT(ErrorOf([&] { adam->LoadState(no_slot); }),
              HasSubstr("state key 'w' is not '<variable>/<slot>'"));

  State float_step = AdamState();
  float_step["w/step"] = Tensor::Scalar(1.0F);
  EXPECT_THAT(ErrorOf([&] { adam->LoadState(float_step); }),
              HasSubstr("state 'w/step' must be an int64 scalar, got float32 []"));

  State negative_step = AdamState();
  negative_step["w/step"] = Tensor::FromVector<int64_t>({}, {-1});
  EXPECT_THAT(ErrorOf([&] { adam->LoadState(negative_step); }),
              HasSubstr("state 'w/step' must be >= 0, got -1"));

  State double_buffer = AdamState();
  double_buffer["w/exp_avg"] = Tensor::FromVector<double>({2}, {0, 0});
  EXPECT_THAT(ErrorOf([&] { adam->LoadState(double_buffer); }),
              HasSubstr("state 'w/exp_avg' must be float32, got float64"));

  State mismatched = AdamState();
  mismatched["w/exp_avg_sq"] = Tensor::Zeros(DType::kFloat32, {3});
  EXPECT_THAT(ErrorOf([&] { adam->LoadState(mismatched); }),
              HasSubstr("state 'w/exp_avg_sq' has shape [3], other slots of 'w' have [2]"));

  State undefined = AdamState();
  undefined["w/exp_avg"] = Tensor();
  EXPECT_THAT(ErrorOf([&] { adam->LoadState(undefined); }),
              HasSubstr("state 'w/exp_avg' is an undefined tensor"));
}

TEST(StateTest, FailedLoadKeepsTheCurrentState) {
  const auto adam = Make("adam", {});
  Tensor p = Tensor::FromVector<float>({2}, {1, 2});
  adam->Apply("v", p, Tensor::FromVector<float>({2}, {1, 1}));
  const State before = adam->SaveState();
  State bad = AdamState();
  bad.erase("w/exp_avg");
  EXPECT_THROW(adam->LoadState(bad), Error);
  const State after = adam->SaveState();
  ASSERT_EQ(Keys(before), Keys(after));
  for (const auto& [key, value] : before) EXPECT_TRUE(BitIdentical(value, after.at(key))) << key;
}

TEST(StateTest, StateOfAnotherShapeFailsAtTheVariablesNextUpdate) {
  const auto adam = Make("adam", {});
  adam->LoadState(AdamState());  // 'w' has shape [2] in the state
  Tensor p = Tensor::FromVector<float>({3}, {1, 2, 3});
  EXPECT_THAT(ErrorOf([&] {
                adam->Apply("w", p, Tensor::FromVector<float>({3}, {1, 1, 1}));
              }),
              HasSubstr("state 'w/exp_avg' has shape [2] but variable 'w' has shape [3]"));
}

TEST(StateTest, LoadReplacesAllState) {
  // A variable absent from the loaded state starts afresh: its first Adam step moves it by lr.
  const auto adam = Make("adam", {{"lr", "0.01"}});
  Tensor other = Tensor::FromVector<float>({1}, {1});
  adam->Apply("other", other, Tensor::FromVector<float>({1}, {1}));
  adam->Apply("other", other, Tensor::FromVector<float>({1}, {-1}));
  adam->LoadState(AdamState());
  EXPECT_EQ(Keys(adam->SaveState()),
            (std::set<std::string>{"w/exp_avg", "w/exp_avg_sq", "w/step"}));
  Tensor fresh = Tensor::FromVector<float>({1}, {1});
  adam->Apply("other", fresh, Tensor::FromVector<float>({1}, {1}));
  EXPECT_NEAR(fresh.data<float>()[0], 0.99, 1e-6);
}

}  // namespace
}  // namespace autodist::optim
