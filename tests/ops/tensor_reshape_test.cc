#include <gmock/gmock.h>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor ShapeInput(const std::vector<int64_t>& dims) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
}

Shape ReshapedShape(const Tensor& x, const std::vector<int64_t>& dims, int64_t allowzero = 0) {
  return RunOp(OpCase{"Reshape", {x, ShapeInput(dims)}, {AttrInt("allowzero", allowzero)}})[0]
      .shape();
}

TEST(ReshapeTest, ResolvesZeroAndMinusOne) {
  const Tensor x = RandomTensor({2, 3, 4}, 1);
  EXPECT_EQ(ReshapedShape(x, {0, -1}), (Shape{2, 12}));
  EXPECT_EQ(ReshapedShape(x, {-1}), (Shape{24}));
  EXPECT_EQ(ReshapedShape(x, {4, 0, 2}), (Shape{4, 3, 2}));  // the 0 copies dim 1 (3)
  EXPECT_EQ(ReshapedShape(x, {0, 0, -1, 1}), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(ReshapedShape(x, {1, -1, 6}), (Shape{1, 4, 6}));
  EXPECT_EQ(ReshapedShape(RandomTensor({1}, 2), {}), (Shape{}));  // to a scalar
}

TEST(ReshapeTest, IsAZeroCopyViewKeepingTheValues) {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor y = RunOp(OpCase{"Reshape", {x, ShapeInput({3, -1})}})[0];
  EXPECT_TRUE(y.SharesStorageWith(x));
  ExpectTensorNear(y, {1, 2, 3, 4, 5, 6}, {3, 2});
}

TEST(ReshapeTest, CarriesInt64Tensors) {
  const Tensor x = Tensor::FromVector<int64_t>({4}, {7, 8, 9, 10});
  const Tensor y = RunOp(OpCase{"Reshape", {x, ShapeInput({2, 2})}})[0];
  EXPECT_EQ(y.dtype(), DType::kInt64);
  ExpectTensorNear(y, {7, 8, 9, 10}, {2, 2});
}

TEST(ReshapeTest, AllowZeroMakesZeroLiteral) {
  // Input [3, 0]: without allowzero, [0, 5] copies the 3 and cannot hold 0 elements; with it,
  // the 0 is a zero-sized axis.
  const Tensor empty(DType::kFloat32, {3, 0});
  EXPECT_EQ(ReshapedShape(empty, {0, 5}, 1), (Shape{0, 5}));
  EXPECT_THROW(ReshapedShape(empty, {0, 5}, 0), Error);
  // A literal 0 next to -1 leaves -1 undetermined (ONNX forbids it; PyTorch rejects it).
  EXPECT_THROW(ReshapedShape(RandomTensor({2, 3}, 3), {0, -1}, 1), Error);
  // Opset 13 (before allowzero) copies: [2, 3] -> [2, 3].
  EXPECT_EQ(
      RunOp(OpCase{"Reshape", {RandomTensor({2, 3}, 4), ShapeInput({0, 3})}, {}, 1, 13})[0].shape(),
      (Shape{2, 3}));
}

TEST(ReshapeTest, GradientIsTheOutputGradientReshaped) {
  ExpectGradientsMatch(OpCase{"Reshape", {RandomTensor({2, 3, 4}, 5), ShapeInput({4, -1})}});
  ExpectGradientsMatch(OpCase{
      "Reshape", {RandomTensor({6, 2}, 6), ShapeInput({3, 0, 2})}, {AttrInt("allowzero", 0)}});
  OpRunner runner(OpCase{"Reshape", {RandomTensor({2, 3}, 7), ShapeInput({3, 2})}});
  EXPECT_FALSE(runner.kernel().IsDifferentiable(1));
}

TEST(ReshapeTest, BadShapesNameTheNode) {
  const Tensor x = RandomTensor({2, 3, 4}, 8);
  const auto reshape = [&](const std::vector<int64_t>& dims) {
    RunOp(OpCase{"Reshape", {x, ShapeInput(dims)}});
  };
  EXPECT_THAT(
      [&] {
        reshape({-1, -1});
      },
      ThrowsMessage<Error>(HasSubstr("Reshape node 'test_Reshape'")));
  EXPECT_THAT([&] { reshape({-1, -1}); }, ThrowsMessage<Error>(HasSubstr("more than one -1")));
  EXPECT_THAT([&] { reshape({-2, 12}); }, ThrowsMessage<Error>(HasSubstr("negative dimension")));
  EXPECT_THAT([&] { reshape({5, 5}); }, ThrowsMessage<Error>(HasSubstr("cannot reshape")));
  EXPECT_THAT([&] { reshape({5, -1}); }, ThrowsMessage<Error>(HasSubstr("cannot infer")));
  EXPECT_THAT(
      [&] {
        reshape({2, 3, 4, 0});
      },
      ThrowsMessage<Error>(HasSubstr("copies dimension 3")));
  EXPECT_THROW(RunOp(OpCase{"Reshape", {x, Tensor::FromVector<float>({2}, {2, 12})}}), Error);
  EXPECT_THROW(RunOp(OpCase{"Reshape", {x, Tensor::FromVector<int64_t>({1, 2}, {2, 12})}}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
