#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

Tensor Labels(const Shape& shape, const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>(shape, values);
}

TEST(SoftmaxCrossEntropyTest, MeanLossMatchesHandComputation) {
  // Row 0: logits [0, 0] -> p = 0.5 each; row 1: [ln 3, 0] -> p = [0.75, 0.25].
  const float ln3 = std::log(3.0F);
  OpCase op{"SoftmaxCrossEntropyLoss",
            {Tensor::FromVector<float>({2, 2}, {0, 0, ln3, 0}), Labels({2}, {1, 0})}};
  // Losses: -ln 0.5 and -ln 0.75; mean:
  const float expected = (std::log(2.0F) - std::log(0.75F)) / 2.0F;
  ExpectTensorNear(RunOp(op)[0], {expected}, {});
}

TEST(SoftmaxCrossEntropyTest, WeightsAndIgnoreIndexFollowPyTorch) {
  // Three rows, the last ignored; mean divides by the weights of the two counted targets.
  const Tensor scores = RandomTensor({3, 4}, 3);
  const Tensor weights = Tensor::FromVector<float>({4}, {1, 2, 3, 4});
  OpCase op{"SoftmaxCrossEntropyLoss",
            {scores, Labels({3}, {1, 3, 2}), weights},
            {AttrInt("ignore_index", 2)},
            2};
  const std::vector<Tensor> out = RunOp(op);
  const float* lp = out[1].data<float>();
  const double expected = (2.0 * -lp[0 * 4 + 1] + 4.0 * -lp[1 * 4 + 3]) / (2.0 + 4.0);
  EXPECT_NEAR(out[0].GetAsDouble(0), expected, 1e-6);
  // log_prob rows are log-softmax: exp sums to one.
  for (int r = 0; r < 3; ++r) {
    double total = 0;
    for (int k = 0; k < 4; ++k) total += std::exp(lp[r * 4 + k]);
    EXPECT_NEAR(total, 1.0, 1e-6);
  }
}

TEST(SoftmaxCrossEntropyTest, GradientsForEveryReduction) {
  for (const char* reduction : {"mean", "sum", "none"}) {
    OpCase op{"SoftmaxCrossEntropyLoss",
              {RandomTensor({3, 5}, 7), Labels({3}, {4, 0, 2}), RandomTensor({5}, 8, 0.5F, 2.0F)},
              {AttrString("reduction", reduction)},
              2};
    ExpectGradientsMatch(op, {0});
  }
}

TEST(SoftmaxCrossEntropyTest, GradientWithSpatialDimsAndIgnoredTargets) {
  OpCase op{"SoftmaxCrossEntropyLoss",
            {RandomTensor({2, 3, 2}, 9), Labels({2, 2}, {0, 2, -1, 1})},
            {AttrInt("ignore_index", -1)}};
  ExpectGradientsMatch(op, {0});
}

TEST(SoftmaxCrossEntropyTest, BadLabelsAreClearErrors) {
  EXPECT_THROW(
      RunOp(OpCase{"SoftmaxCrossEntropyLoss", {RandomTensor({2, 3}, 1), Labels({2}, {0, 3})}}),
      Error);
  EXPECT_THROW(
      RunOp(OpCase{"SoftmaxCrossEntropyLoss", {RandomTensor({2, 3}, 1), Labels({3}, {0, 1, 2})}}),
      Error);
  EXPECT_THROW(RunOp(OpCase{"SoftmaxCrossEntropyLoss",
                            {RandomTensor({2, 3}, 1), Labels({2}, {0, 1})},
                            {AttrString("reduction", "avg")}}),
               Error);
}

}  // namespace
}  // namespace autodist::ops::testing
