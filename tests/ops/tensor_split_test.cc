#include <gmock/gmock.h>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor Lengths(const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

TEST(SplitTest, SplitsEquallyIntoTheNodesOutputs) {
  const Tensor x = Tensor::FromVector<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const std::vector<Tensor> out = RunOp(OpCase{"Split", {x}, {AttrInt("axis", 1)}, 2});
  ExpectTensorNear(out[0], {1, 2, 5, 6}, {2, 2});
  ExpectTensorNear(out[1], {3, 4, 7, 8}, {2, 2});
  const std::vector<Tensor> rows = RunOp(OpCase{"Split", {x}, {}, 2});  // axis defaults to 0
  ExpectTensorNear(rows[0], {1, 2, 3, 4}, {1, 4});
  ExpectTensorNear(rows[1], {5, 6, 7, 8}, {1, 4});
}

TEST(SplitTest, LengthsFromTheInputFromOpset13) {
  const Tensor x = Tensor::FromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<Tensor> out =
      RunOp(OpCase{"Split", {x, Lengths({1, 0, 2})}, {AttrInt("axis", -1)}, 3});
  EXPECT_EQ(out[0].dtype(), DType::kInt64);
  ExpectTensorNear(out[0], {1, 4}, {2, 1});
  EXPECT_EQ(out[1].shape(), (Shape{2, 0}));
  ExpectTensorNear(out[2], {2, 3, 5, 6}, {2, 2});
}

TEST(SplitTest, LengthsFromTheAttributeBeforeOpset13) {
  const Tensor x = Tensor::FromVector<float>({5}, {1, 2, 3, 4, 5});
  const std::vector<Tensor> out = RunOp(OpCase{"Split", {x}, {AttrInts("split", {3, 2})}, 2, 12});
  ExpectTensorNear(out[0], {1, 2, 3}, {3});
  ExpectTensorNear(out[1], {4, 5}, {2});
  // Opset 11 without the attribute: equal parts.
  const std::vector<Tensor> thirds = RunOp(OpCase{"Split", {RandomTensor({6, 2}, 1)}, {}, 3, 11});
  EXPECT_EQ(thirds[2].shape(), (Shape{2, 2}));
}

TEST(SplitTest, GradientJoinsTheOutputGradients) {
  ExpectGradientsMatch(OpCase{"Split", {RandomTensor({2, 6, 3}, 2)}, {AttrInt("axis", 1)}, 3});
  ExpectGradientsMatch(
      OpCase{"Split", {RandomTensor({4, 5}, 3), Lengths({1, 4})}, {AttrInt("axis", -1)}, 2});
  ExpectGradientsMatch(
      OpCase{"Split", {RandomTensor({5, 2}, 4)}, {AttrInts("split", {2, 3})}, 2, 12});
  OpRunner runner(OpCase{"Split", {RandomTensor({4}, 5), Lengths({2, 2})}, {}, 2});
  EXPECT_FALSE(runner.kernel().IsDifferentiable(1));
}

TEST(SplitTest, OutputsWithoutGradientContributeZeros) {
  const Tensor x = RandomTensor({2, 3}, 6);
  OpRunner runner(OpCase{"Split", {x, Lengths({1, 2})}, {AttrInt("axis", 1)}, 2});
  const OpResult result = runner.ForwardBackward(
      {x, Lengths({1, 2})}, {Tensor(), Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4})});
  ExpectTensorNear(result.input_grads[0], {0, 1, 2, 0, 3, 4}, {2, 3});
}

TEST(SplitTest, BadLengthsNameTheNode) {
  const Tensor x = RandomTensor({2, 5}, 7);
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Split", {x}, {AttrInt("axis", 1)}, 2});
      },
      ThrowsMessage<Error>(HasSubstr("cannot be split equally into 2 outputs")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Split", {x, Lengths({2, 2})}, {AttrInt("axis", 1)}, 2});
      },
      ThrowsMessage<Error>(HasSubstr("Split node 'test_Split'")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Split", {x, Lengths({2, 2, 1})}, {AttrInt("axis", 1)}, 2});
      },
      ThrowsMessage<Error>(HasSubstr("summing to the axis length 5")));
  EXPECT_THROW(RunOp(OpCase{"Split", {x, Lengths({6, -1})}, {AttrInt("axis", 1)}, 2}), Error);
  EXPECT_THROW(RunOp(OpCase{"Split", {x}, {AttrInt("axis", 2)}, 2}), Error);
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Split", {x}, {AttrInts("split", {1, 4})}, 2});
      },
      ThrowsMessage<Error>(HasSubstr("from opset 13 'split' is an input")));
  EXPECT_THROW(RunOp(OpCase{"Split", {Tensor::Scalar(1)}, {}, 1}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
