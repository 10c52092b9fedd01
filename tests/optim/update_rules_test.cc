// Each optimizer's update rule on tiny inputs, against the formulas of the torch.optim
// documentation evaluated by hand in double precision (independent of the PyTorch fixtures), and
// the checks Apply makes on its inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/optim/optimizer.h"
#include "tests/optim/optim_test_util.h"

namespace autodist::optim {
namespace {

using ::autodist::optim::testing::ErrorOf;
using tensor::Tensor;
using ::testing::HasSubstr;

std::unique_ptr<Optimizer> Make(const std::string& name,
                                const std::map<std::string, std::string>& options) {
  return MakeOptimizer(ParseOptimizerOptions(name, options));
}

// Applies the gradients (one scalar per step) to a one-element parameter starting at `start`;
// returns the parameter after each step.
std::vector<double> Steps(Optimizer& optimizer, float start, const std::vector<float>& grads) {
  Tensor param = Tensor::FromVector<float>({1}, {start});
  std::vector<double> out;
  for (const float g : grads) {
    optimizer.Apply("w", param, Tensor::FromVector<float>({1}, {g}));
    out.push_back(param.data<float>()[0]);
  }
  return out;
}

constexpr double kTolerance = 1e-6;

TEST(UpdateRulesTest, SgdPlainAndWeightDecay) {
  // p -= lr * (g + wd * p): 1 - 0.1 * (2 + 0.1 * 1) = 0.79.
  const auto sgd = Make("sgd", {{"lr", "0.1"}, {"weight_decay", "0.1"}});
  const std::vector<double> p = Steps(*sgd, 1.0F, {2.0F, 2.0F});
  EXPECT_NEAR(p[0], 0.79, kTolerance);
  EXPECT_NEAR(p[1], 0.79 - 0.1 * (2 + 0.1 * 0.79), kTolerance);
}

TEST(UpdateRulesTest, SgdMomentumStartsFromTheFirstGradientWithoutDampening) {
  // torch: the first buffer is d_p itself (no (1 - dampening)); later buf = m * buf + (1 - d) g.
  const auto sgd = Make("sgd", {{"lr", "0.1"}, {"momentum", "0.9"}, {"dampening", "0.5"}});
  const std::vector<double> p = Steps(*sgd, 1.0F, {2.0F, 2.0F});
  EXPECT_NEAR(p[0], 1.0 - 0.1 * 2.0, kTolerance);
  EXPECT_NEAR(p[1], p[0] - 0.1 * (0.9 * 2.0 + 0.5 * 2.0), kTolerance);
}

TEST(UpdateRulesTest, SgdNesterov) {
  // d = g + m * buf with buf = g on the first step: 1 - 0.1 * (2 + 0.9 * 2) = 0.62.
  const auto sgd = Make("sgd", {{"lr", "0.1"}, {"momentum", "0.9"}, {"nesterov", "true"}});
  const std::vector<double> p = Steps(*sgd, 1.0F, {2.0F, 1.0F});
  EXPECT_NEAR(p[0], 0.62, kTolerance);
  const double buf = 0.9 * 2.0 + 1.0;
  EXPECT_NEAR(p[1], 0.62 - 0.1 * (1.0 + 0.9 * buf), kTolerance);
}

// Adam by the book, in double.
std::vector<double> AdamByHand(double p, const std::vector<double>& grads, double lr, double b1,
                               double b2, double eps, double wd, bool decoupled, bool amsgrad) {
  double m = 0;
  double v = 0;
  double v_max = 0;
  std::vector<double> out;
  for (size_t i = 0; i < grads.size(); ++i) {
    const auto t = static_cast<double>(i + 1);
    double g = grads[i];
    if (decoupled) {
      p *= 1 - lr * wd;
    } else {
      g += wd * p;
    }
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    v_max = std::max(v_max, v);
    const double second = amsgrad ? v_max : v;
    p -=
        lr / (1 - std::pow(b1, t)) * m / (std::sqrt(second) / std::sqrt(1 - std::pow(b2, t)) + eps);
    out.push_back(p);
  }
  return out;
}

TEST(UpdateRulesTest, AdamFirstStepMovesByTheLearningRate) {
  // Bias correction makes the first step lr * g / (|g| + eps).
  const auto adam = Make("adam", {{"lr", "0.01"}});
  EXPECT_NEAR(Steps(*adam, 1.0F, {-3.0F})[0], 1.01, kTolerance);
}

TEST(UpdateRulesTest, AdamL2AmsgradAndAdamWDecoupled) {
  const std::vector<float> grads{2.0F, 0.0F, -1.0F, 0.5F};
  const std::vector<double> grads_d(grads.begin(), grads.end());
  const auto adam = Make("adam", {{"lr", "0.01"}, {"weight_decay", "0.1"}});
  const auto amsgrad = Make("adam", {{"lr", "0.01"}, {"amsgrad", "true"}, {"betas", "0.5,0.9"}});
  const auto adamw = Make("adamw", {{"lr", "0.01"}, {"weight_decay", "0.1"}});
  const std::vector<double> p_adam = Steps(*adam, 1.0F, grads);
  const std::vector<double> p_amsgrad = Steps(*amsgrad, 1.0F, grads);
  const std::vector<double> p_adamw = Steps(*adamw, 1.0F, grads);
  const auto e_adam = AdamByHand(1.0, grads_d, 0.01, 0.9, 0.999, 1e-8, 0.1, false, false);
  const auto e_amsgrad = AdamByHand(1.0, grads_d, 0.01, 0.5, 0.9, 1e-8, 0.0, false, true);
  const auto e_adamw = AdamByHand(1.0, grads_d, 0.01, 0.9, 0.999, 1e-8, 0.1, true, false);
  for (size_t i = 0; i < grads.size(); ++i) {
    EXPECT_NEAR(p_adam[i], e_adam[i], kTolerance) << "adam step " << i + 1;
    EXPECT_NEAR(p_amsgrad[i], e_amsgrad[i], kTolerance) << "amsgrad step " << i + 1;
    EXPECT_NEAR(p_adamw[i], e_adamw[i], kTolerance) << "adamw step " << i + 1;
  }
  // amsgrad must differ from plain Adam once v shrinks (step 2 has g = 0).
  const auto e_plain = AdamByHand(1.0, grads_d, 0.01, 0.5, 0.9, 1e-8, 0.0, false, false);
  EXPECT_GT(std::fabs(e_plain[2] - e_amsgrad[2]), 1e-4);
}

TEST(UpdateRulesTest, AdagradLrDecayAndInitialAccumulator) {
  // clr = lr / (1 + (t - 1) * lr_decay); sum += g^2; p -= clr * g / (sqrt(sum) + eps).
  const auto adagrad =
      Make("adagrad", {{"lr", "0.1"}, {"lr_decay", "0.5"}, {"initial_accumulator_value", "0.25"}});
  const std::vector<double> p = Steps(*adagrad, 1.0F, {2.0F, 2.0F});
  const double p1 = 1.0 - 0.1 * 2.0 / (std::sqrt(0.25 + 4.0) + 1e-10);
  const double p2 = p1 - (0.1 / 1.5) * 2.0 / (std::sqrt(0.25 + 8.0) + 1e-10);
  EXPECT_NEAR(p[0], p1, kTolerance);
  EXPECT_NEAR(p[1], p2, kTolerance);
}

TEST(UpdateRulesTest, RmspropPlainCenteredAndMomentum) {
  // square_avg = 0.01 * 4 = 0.04 after one step of g = 2 (alpha 0.99).
  const auto plain = Make("rmsprop", {{"lr", "0.01"}});
  EXPECT_NEAR(Steps(*plain, 1.0F, {2.0F})[0], 1.0 - 0.01 * 2.0 / (0.2 + 1e-8), kTolerance);

  // centered: grad_avg = 0.02, avg = sqrt(0.04 - 0.0004).
  const auto centered = Make("rmsprop", {{"lr", "0.01"}, {"centered", "true"}});
  EXPECT_NEAR(Steps(*centered, 1.0F, {2.0F})[0], 1.0 - 0.01 * 2.0 / (std::sqrt(0.0396) + 1e-8),
              kTolerance);

  // momentum: buf = 0.9 * buf + g / avg, p -= lr * buf.
  const auto momentum = Make("rmsprop", {{"lr", "0.01"}, {"momentum", "0.9"}});
  const std::vector<double> p = Steps(*momentum, 1.0F, {2.0F, 2.0F});
  const double buf1 = 2.0 / (0.2 + 1e-8);
  const double buf2 = 0.9 * buf1 + 2.0 / (std::sqrt(0.99 * 0.04 + 0.04) + 1e-8);
  EXPECT_NEAR(p[0], 1.0 - 0.01 * buf1, kTolerance);
  EXPECT_NEAR(p[1], 1.0 - 0.01 * buf1 - 0.01 * buf2, kTolerance);
}

TEST(UpdateRulesTest, VariablesKeepSeparateState) {
  // Two steps on 'a' must not advance 'b': b's first Adam step still moves it by exactly lr.
  const auto adam = Make("adam", {{"lr", "0.01"}});
  Tensor a = Tensor::FromVector<float>({2}, {1, 1});
  Tensor b = Tensor::FromVector<float>({3}, {1, 1, 1});
  adam->Apply("a", a, Tensor::FromVector<float>({2}, {1, 1}));
  adam->Apply("a", a, Tensor::FromVector<float>({2}, {-5, 5}));
  adam->Apply("b", b, Tensor::FromVector<float>({3}, {4, -4, 0.5F}));
  EXPECT_NEAR(b.data<float>()[0], 0.99, kTolerance);
  EXPECT_NEAR(b.data<float>()[1], 1.01, kTolerance);
  EXPECT_NEAR(b.data<float>()[2], 0.99, kTolerance);
}

TEST(UpdateRulesTest, LearningRateChangesTakeEffectOnTheNextStep) {
  const auto sgd = Make("sgd", {{"lr", "0.1"}});
  Tensor p = Tensor::FromVector<float>({1}, {1});
  sgd->set_learning_rate(0.5);
  sgd->Apply("w", p, Tensor::FromVector<float>({1}, {1}));
  EXPECT_FLOAT_EQ(p.data<float>()[0], 0.5F);
}

TEST(UpdateRulesTest, LargeVariablesAreSplitAcrossThreadsWithoutChangingResults) {
  // 100003 elements: several parallel chunks (kernels use all cores by default) and an odd
  // tail. Each element must get exactly the update a one-element variable with the same value
  // and gradient gets.
  const int64_t n = 100003;
  std::vector<float> start(static_cast<size_t>(n));
  std::vector<float> grad(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    start[static_cast<size_t>(i)] = static_cast<float>((i * 7919) % 1000) / 500.0F - 1.0F;
    grad[static_cast<size_t>(i)] = static_cast<float>((i * 104729) % 997) / 300.0F - 1.6F;
  }
  for (const std::string name : {"sgd", "adam", "adagrad", "rmsprop"}) {
    SCOPED_TRACE(name);
    const std::map<std::string, std::string> options{{"lr", "0.01"}, {"weight_decay", "0.01"}};
    const auto big = Make(name, options);
    Tensor p = Tensor::FromVector<float>({n}, start);
    big->Apply("w", p, Tensor::FromVector<float>({n}, grad));
    for (const int64_t i : {int64_t{0}, int64_t{1}, n / 2, n - 2, n - 1}) {
      const auto single = Make(name, options);
      const std::vector<double> expected =
          Steps(*single, start[static_cast<size_t>(i)], {grad[static_cast<size_t>(i)]});
      EXPECT_EQ(p.data<float>()[i], static_cast<float>(expected[0])) << "element " << i;
    }
  }
}

TEST(UpdateRulesTest, BadInputsNameTheVariable) {
  const auto adam = Make("adam", {});
  Tensor p = Tensor::FromVector<float>({2}, {1, 2});
  EXPECT_THAT(ErrorOf([&] {
                adam->Apply("fc.weight", p, Tensor::FromVector<float>({3}, {1, 2, 3}));
              }),
              HasSubstr("gradient of 'fc.weight' has shape [3], the variable has [2]"));
  EXPECT_THAT(ErrorOf([&] {
                adam->Apply("fc.weight", p, Tensor::FromVector<double>({2}, {1, 2}));
              }),
              HasSubstr("gradient of 'fc.weight' must be float32, got float64"));
  Tensor ints = Tensor::FromVector<int64_t>({2}, {1, 2});
  EXPECT_THAT(ErrorOf([&] {
                adam->Apply("step", ints, Tensor::FromVector<float>({2}, {1, 2}));
              }),
              HasSubstr("variable 'step' must be float32, got int64"));
  // A variable whose shape changes between steps contradicts its state.
  adam->Apply("w", p, Tensor::FromVector<float>({2}, {1, 2}));
  Tensor bigger = Tensor::FromVector<float>({3}, {1, 2, 3});
  EXPECT_THAT(ErrorOf([&] {
                adam->Apply("w", bigger, Tensor::FromVector<float>({3}, {1, 2, 3}));
              }),
              HasSubstr("state 'w/exp_avg' has shape [2] but variable 'w' has shape [3]"));
}

}  // namespace
}  // namespace autodist::optim
