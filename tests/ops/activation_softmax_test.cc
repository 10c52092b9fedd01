#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

// The [2, 3, 2] input of the PyTorch reference values below.
Tensor Input() {
  return Tensor::FromVector<float>({2, 3, 2}, {1, 2, 3, -1, 0.5F, 0, -2, 4, 0, 0, 1, 1});
}

TEST(SoftmaxTest, AlongAMiddleAxisMatchesPyTorch) {
  // torch.softmax(x, 1).flatten()
  ExpectTensorNear(RunOp({"Softmax", {Input()}, {AttrInt("axis", 1)}})[0],
                   {0.1111656F, 0.8437947F, 0.8214090F, 0.0420101F, 0.0674254F, 0.1141952F,
                    0.0351190F, 0.9362395F, 0.2594965F, 0.0171478F, 0.7053845F, 0.0466126F},
                   {2, 3, 2});
}

TEST(SoftmaxTest, LogSoftmaxAlongTheLastAxisMatchesPyTorch) {
  // torch.log_softmax(x, -1).flatten(); the default axis is -1 from opset 13.
  ExpectTensorNear(RunOp({"LogSoftmax", {Input()}})[0],
                   {-1.3132616F, -0.3132617F, -0.0181500F, -4.0181499F, -0.4740770F, -0.9740770F,
                    -6.0024757F, -0.0024757F, -0.6931472F, -0.6931472F, -0.6931472F, -0.6931472F},
                   {2, 3, 2});
}

TEST(SoftmaxTest, OpsetElevenCoercesToTwoDimensions) {
  // Opset 11, default axis 1: rows of 6, torch.softmax(x.reshape(2, 6), 1).
  OpCase op{"Softmax", {Input()}};
  op.opset = 11;
  ExpectTensorNear(RunOp(op)[0],
                   {0.0818526F, 0.2224984F, 0.6048134F, 0.0110775F, 0.0496461F, 0.0301119F,
                    0.0021769F, 0.8782067F, 0.0160849F, 0.0160849F, 0.0437233F, 0.0437233F},
                   {2, 3, 2});
  // axis = rank: every element is its own row, so all ones.
  op.attributes = {AttrInt("axis", 3)};
  ExpectTensorNear(RunOp(op)[0], std::vector<float>(12, 1.0F), {2, 3, 2});
}

TEST(SoftmaxTest, LargeLogitsDoNotOverflow) {
  const Tensor x = Tensor::FromVector<float>({1, 3}, {1000, 1000, -1000});
  ExpectTensorNear(RunOp({"Softmax", {x}})[0], {0.5F, 0.5F, 0}, {1, 3});
  ExpectTensorNear(RunOp({"LogSoftmax", {x}})[0], {-0.6931472F, -0.6931472F, -2000.6931F}, {1, 3},
                   1e-3F);
}

TEST(SoftmaxTest, WideInnerAxesUseColumnBlocks) {
  // Softmax over axis 1 of [3, 5, 300]: inner 300 spans two column blocks. Columns sum to one
  // and each column equals the softmax of that column computed alone.
  const Tensor x = RandomTensor({3, 5, 300}, 4, -3, 3);
  const Tensor y = RunOp({"Softmax", {x}, {AttrInt("axis", 1)}})[0];
  for (int64_t o = 0; o < 3; ++o) {
    for (int64_t j = 0; j < 300; ++j) {
      double total = 0;
      for (int64_t k = 0; k < 5; ++k) total += std::exp(x.GetAsDouble((o * 5 + k) * 300 + j));
      for (int64_t k = 0; k < 5; ++k) {
        const int64_t at = (o * 5 + k) * 300 + j;
        ASSERT_NEAR(y.GetAsDouble(at), std::exp(x.GetAsDouble(at)) / total, 1e-6);
      }
    }
  }
}

class SoftmaxGradientTest
    : public ::testing::TestWithParam<std::tuple<std::string, int64_t, int64_t>> {};

TEST_P(SoftmaxGradientTest, MatchesFiniteDifferences) {
  const auto& [op_type, axis, opset] = GetParam();
  OpCase op{op_type, {RandomTensor({2, 3, 4}, 6, -2, 2)}, {AttrInt("axis", axis)}};
  op.opset = opset;
  ExpectGradientsMatch(op);
}

INSTANTIATE_TEST_SUITE_P(AxesAndOpsets, SoftmaxGradientTest,
                         ::testing::Combine(::testing::Values("Softmax", "LogSoftmax"),
                                            ::testing::Values(0, 1, 2, -1, -3),
                                            ::testing::Values(11, 13)));

TEST(SoftmaxTest, BackwardReadsOnlyTheOutput) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    const Tensor x = RandomTensor({2, 4}, 1);
    OpRunner runner({op, {x}});
    const std::vector<Tensor> y = runner.Forward({x});
    EXPECT_FALSE(runner.kernel().BackwardNeedsInput(0));
    const Tensor dy = Tensor::Full({2, 4}, 1.0F);
    const NodeInfo* no_node = nullptr;
    BackwardContext ctx({nullptr}, {&y[0]}, {&dy}, {true}, nullptr, no_node);
    runner.kernel().Backward(ctx);
    const Tensor dx = ctx.take_input_grads()[0];
    // Softmax rows sum to one, so a constant upstream gradient gives zero; LogSoftmax gives
    // 1 - 4 p.
    for (int64_t i = 0; i < 8; ++i) {
      const double expected =
          std::string(op) == "Softmax" ? 0.0 : 1.0 - 4.0 * std::exp(y[0].GetAsDouble(i));
      EXPECT_NEAR(dx.GetAsDouble(i), expected, 1e-6);
    }
  }
}

TEST(SoftmaxTest, BadAxisIsAClearError) {
  ExpectNodeError({"Softmax", {RandomTensor({2, 3}, 1)}, {AttrInt("axis", 2)}}, "axis 2");
  ExpectNodeError({"LogSoftmax", {RandomTensor({2, 3}, 1)}, {AttrInt("axis", -3)}}, "axis -3");
  OpCase old{"Softmax", {RandomTensor({2, 3}, 1)}, {AttrInt("axis", 3)}};
  old.opset = 11;
  ExpectNodeError(old, "out of range");
  ExpectNodeError({"Softmax", {Tensor::FromVector<int64_t>({1}, {1})}}, "float32");
}

}  // namespace
}  // namespace autodist::ops::testing
