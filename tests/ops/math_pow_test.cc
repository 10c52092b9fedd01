#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(PowTest, ScalarExponentsIncludingSpecialForms) {
  const Tensor x = Tensor::FromVector<float>({4}, {0.25F, 1, 2, 9});
  const auto run = [&](float e) { return RunOp({"Pow", {x, Tensor::Scalar(e)}})[0]; };
  ExpectTensorNear(run(2), {0.0625F, 1, 4, 81}, {4});
  ExpectTensorNear(run(3), {0.015625F, 1, 8, 729}, {4});
  ExpectTensorNear(run(0.5F), {0.5F, 1, std::sqrt(2.0F), 3}, {4});
  ExpectTensorNear(run(-0.5F), {2, 1, 1 / std::sqrt(2.0F), 1.0F / 3}, {4});
  ExpectTensorNear(run(-1), {4, 1, 0.5F, 1.0F / 9}, {4});
  ExpectTensorNear(run(-2), {16, 1, 0.25F, 1.0F / 81}, {4});
  ExpectTensorNear(run(0), {1, 1, 1, 1}, {4});
  ExpectTensorNear(run(1), {0.25F, 1, 2, 9}, {4});
  ExpectTensorNear(run(1.5F), {0.125F, 1, 2 * std::sqrt(2.0F), 27}, {4}, 1e-5F);
}

TEST(PowTest, BroadcastExponentAndScalarBase) {
  const Tensor base = Tensor::FromVector<float>({2, 1}, {2, 3});
  const Tensor exponent = Tensor::FromVector<float>({3}, {0, 1, 2});
  ExpectTensorNear(RunOp({"Pow", {base, exponent}})[0], {1, 2, 4, 1, 3, 9}, {2, 3});
  ExpectTensorNear(RunOp({"Pow", {Tensor::Scalar(2), exponent}})[0], {1, 2, 4}, {3});
}

TEST(PowTest, IntegerExponentIsAccepted) {
  const Tensor base = Tensor::FromVector<float>({3}, {1, 2, -3});
  ExpectTensorNear(RunOp({"Pow", {base, Tensor::FromVector<int64_t>({}, {3})}})[0], {1, 8, -27},
                   {3});
  ExpectTensorNear(RunOp({"Pow", {base, Tensor::FromVector<int32_t>({3}, {2, 0, 1})}})[0],
                   {1, 1, -3}, {3});
  // The integer exponent takes no gradient; the base still does.
  ExpectGradientsMatch({"Pow", {RandomTensor({3}, 4), Tensor::FromVector<int64_t>({}, {3})}});
}

TEST(PowTest, GradientsAtZeroFollowPyTorch) {
  // torch 1.13: b = [0, 0, 2, -1], e = [2, 0, 0, 3] (requires_grad), (b ** e).backward(ones):
  // y = [0, 1, 1, -1], b.grad = [0, 0, 0, 3], e.grad = [0, 0, 0.6931472, nan].
  const Tensor base = Tensor::FromVector<float>({4}, {0, 0, 2, -1});
  const Tensor exponent = Tensor::FromVector<float>({4}, {2, 0, 0, 3});
  OpRunner runner({"Pow", {base, exponent}});
  const OpResult result = runner.ForwardBackward({base, exponent}, {Tensor::Full({4}, 1.0F)});
  ExpectTensorNear(result.outputs[0], {0, 1, 1, -1}, {4});
  ExpectTensorNear(result.input_grads[0], {0, 0, 0, 3}, {4});
  const Tensor& de = result.input_grads[1];
  EXPECT_EQ(de.GetAsDouble(0), 0.0);
  EXPECT_EQ(de.GetAsDouble(1), 0.0);
  EXPECT_NEAR(de.GetAsDouble(2), 0.6931472, 1e-6);
  EXPECT_TRUE(std::isnan(de.GetAsDouble(3)));
}

TEST(PowTest, SquareRootGradientAtZeroIsInfinite) {
  // torch: b = [0, 1.5, 4], (b ** 0.5).backward(ones): b.grad = [inf, 0.4082483, 0.25].
  const Tensor base = Tensor::FromVector<float>({3}, {0, 1.5F, 4});
  OpRunner runner({"Pow", {base, Tensor::Scalar(0.5F)}});
  const OpResult result =
      runner.ForwardBackward({base, Tensor::Scalar(0.5F)}, {Tensor::Full({3}, 1.0F)});
  EXPECT_TRUE(std::isinf(result.input_grads[0].GetAsDouble(0)));
  EXPECT_NEAR(result.input_grads[0].GetAsDouble(1), 0.40824827, 1e-6);
  EXPECT_NEAR(result.input_grads[0].GetAsDouble(2), 0.25, 1e-6);
}

class PowGradientTest : public ::testing::TestWithParam<std::pair<Shape, Shape>> {};

TEST_P(PowGradientTest, BothOperandsMatchFiniteDifferences) {
  const auto& [base_shape, exponent_shape] = GetParam();
  // Positive bases keep log(x) defined for the exponent's gradient.
  ExpectGradientsMatch(
      {"Pow", {RandomTensor(base_shape, 1, 0.5F, 2.0F), RandomTensor(exponent_shape, 2, -2, 3)}});
}

INSTANTIATE_TEST_SUITE_P(Shapes, PowGradientTest,
                         ::testing::Values(std::pair<Shape, Shape>{{2, 3}, {2, 3}},
                                           std::pair<Shape, Shape>{{2, 3}, {}},
                                           std::pair<Shape, Shape>{{2, 3}, {1}},
                                           std::pair<Shape, Shape>{{}, {4}},
                                           std::pair<Shape, Shape>{{3, 1}, {1, 4}},
                                           std::pair<Shape, Shape>{{2, 3, 2}, {3, 1}},
                                           std::pair<Shape, Shape>{{3}, {1, 1}}));

TEST(PowTest, SpecialScalarExponentGradients) {
  for (const float e : {0.0F, 1.0F, 2.0F, 3.0F, 0.5F, -0.5F, -1.0F, -2.0F, 2.5F}) {
    SCOPED_TRACE(e);
    ExpectGradientsMatch({"Pow", {RandomTensor({5}, 3, 0.5F, 2.0F), Tensor::Scalar(e)}});
  }
}

TEST(PowTest, BadInputsAreClearErrors) {
  ExpectNodeError({"Pow", {RandomTensor({2, 3}, 1), RandomTensor({2}, 2)}}, "cannot be broadcast");
  ExpectNodeError({"Pow", {Tensor::FromVector<int64_t>({1}, {2}), Tensor::Scalar(2)}},
                  "base must be float32");
  ExpectNodeError({"Pow", {RandomTensor({2}, 1), Tensor::FromVector<uint8_t>({1}, {2})}},
                  "exponent must be");
}

}  // namespace
}  // namespace autodist::ops::testing
