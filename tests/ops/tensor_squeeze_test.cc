#include <gmock/gmock.h>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor Axes(const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

TEST(SqueezeTest, RemovesTheNamedUnitAxes) {
  const Tensor x = RandomTensor({1, 3, 1, 2}, 1);
  const Tensor y = RunOp(OpCase{"Squeeze", {x, Axes({0, -2})}})[0];
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_TRUE(y.SharesStorageWith(x));
  EXPECT_EQ(RunOp(OpCase{"Squeeze", {x, Axes({2})}})[0].shape(), (Shape{1, 3, 2}));
}

TEST(SqueezeTest, WithoutAxesRemovesEveryUnitAxis) {
  const Tensor x = RandomTensor({1, 3, 1, 2, 1}, 2);
  EXPECT_EQ(RunOp(OpCase{"Squeeze", {x}})[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(RunOp(OpCase{"Squeeze", {x, Axes({})}})[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(RunOp(OpCase{"Squeeze", {RandomTensor({1, 1}, 3)}})[0].shape(), (Shape{}));
}

TEST(SqueezeTest, AxesAttributeBeforeOpset13) {
  const Tensor x = Tensor::FromVector<int64_t>({1, 2}, {5, 6});
  const Tensor y = RunOp(OpCase{"Squeeze", {x}, {AttrInts("axes", {0})}, 1, 11})[0];
  EXPECT_EQ(y.dtype(), DType::kInt64);
  ExpectTensorNear(y, {5, 6}, {2});
  EXPECT_EQ(RunOp(OpCase{"Squeeze", {RandomTensor({2, 1}, 4)}, {}, 1, 12})[0].shape(), (Shape{2}));
}

TEST(SqueezeTest, GradientHasTheInputShape) {
  ExpectGradientsMatch(OpCase{"Squeeze", {RandomTensor({2, 1, 3}, 5), Axes({1})}});
  ExpectGradientsMatch(
      OpCase{"Squeeze", {RandomTensor({1, 4, 1}, 6)}, {AttrInts("axes", {-1})}, 1, 11});
}

TEST(SqueezeTest, BadAxesNameTheNode) {
  const Tensor x = RandomTensor({1, 3}, 7);
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Squeeze", {x, Axes({1})}});
      },
      ThrowsMessage<Error>(HasSubstr("Squeeze node 'test_Squeeze'")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Squeeze", {x, Axes({1})}});
      },
      ThrowsMessage<Error>(HasSubstr("its size is not 1")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Squeeze", {x, Axes({2})}});
      },
      ThrowsMessage<Error>(HasSubstr("out of range")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Squeeze", {x, Axes({0, -2})}});
      },
      ThrowsMessage<Error>(HasSubstr("twice")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Squeeze", {x}, {AttrInts("axes", {0})}});
      },
      ThrowsMessage<Error>(HasSubstr("'axes' is an input")));
}

TEST(UnsqueezeTest, InsertsAxesAtOutputPositions) {
  const Tensor x = RandomTensor({3, 4}, 8);
  const Tensor y = RunOp(OpCase{"Unsqueeze", {x, Axes({0, 3})}})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 3, 4, 1}));
  EXPECT_TRUE(y.SharesStorageWith(x));
  EXPECT_EQ(RunOp(OpCase{"Unsqueeze", {x, Axes({-1, 1})}})[0].shape(), (Shape{3, 1, 4, 1}));
  EXPECT_EQ(RunOp(OpCase{"Unsqueeze", {x, Axes({2, 1})}})[0].shape(), (Shape{3, 1, 1, 4}));
  // A scalar index becoming a 1-element list, as exported shape arithmetic does.
  const Tensor scalar = Tensor::FromVector<int64_t>({}, {7});
  const Tensor list = RunOp(OpCase{"Unsqueeze", {scalar, Axes({0})}})[0];
  EXPECT_EQ(list.dtype(), DType::kInt64);
  ExpectTensorNear(list, {7}, {1});
}

TEST(UnsqueezeTest, AxesAttributeBeforeOpset13) {
  EXPECT_EQ(
      RunOp(OpCase{"Unsqueeze", {RandomTensor({2}, 9)}, {AttrInts("axes", {0, -1})}, 1, 11})[0]
          .shape(),
      (Shape{1, 2, 1}));
}

TEST(UnsqueezeTest, GradientHasTheInputShape) {
  ExpectGradientsMatch(OpCase{"Unsqueeze", {RandomTensor({2, 3}, 10), Axes({1})}});
  ExpectGradientsMatch(
      OpCase{"Unsqueeze", {RandomTensor({2, 3}, 11)}, {AttrInts("axes", {0, 3})}, 1, 12});
  OpRunner runner(OpCase{"Unsqueeze", {RandomTensor({2}, 12), Axes({0})}});
  EXPECT_FALSE(runner.kernel().IsDifferentiable(1));
}

TEST(UnsqueezeTest, BadAxesNameTheNode) {
  const Tensor x = RandomTensor({3, 4}, 13);
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Unsqueeze", {x, Axes({3})}});
      },
      ThrowsMessage<Error>(HasSubstr("Unsqueeze node 'test_Unsqueeze'")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Unsqueeze", {x, Axes({3})}});
      },
      ThrowsMessage<Error>(HasSubstr("axis 3 is out of range for rank 3")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Unsqueeze", {x, Axes({1, -3})}});
      },
      ThrowsMessage<Error>(HasSubstr("twice")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Unsqueeze", {x}});
      },
      ThrowsMessage<Error>(HasSubstr("axes are required")));
  EXPECT_THROW(RunOp(OpCase{"Unsqueeze", {x, Tensor::FromVector<float>({1}, {0})}}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
