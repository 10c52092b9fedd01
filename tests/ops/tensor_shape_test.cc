#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

std::vector<int64_t> ShapeOf(const Tensor& x, std::vector<onnx::AttributeProto> attributes = {},
                             int64_t opset = 17) {
  const Tensor y = RunOp(OpCase{"Shape", {x}, std::move(attributes), 1, opset})[0];
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(y.rank(), 1U);
  return y.ToInt64Vector("shape");
}

TEST(ShapeTest, ReturnsTheDimensionsAsInt64) {
  const Tensor x(DType::kFloat32, {2, 3, 4, 5});
  EXPECT_EQ(ShapeOf(x), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(ShapeOf(x, {}, 13), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(ShapeOf(Tensor::Scalar(1)), (std::vector<int64_t>{}));
  EXPECT_EQ(ShapeOf(Tensor(DType::kInt64, {0, 7})), (std::vector<int64_t>{0, 7}));
}

TEST(ShapeTest, StartAndEndFromOpset15) {
  const Tensor x(DType::kFloat32, {2, 3, 4, 5});
  EXPECT_EQ(ShapeOf(x, {AttrInt("start", 1)}), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(ShapeOf(x, {AttrInt("end", -1)}), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(ShapeOf(x, {AttrInt("start", -2), AttrInt("end", 10)}), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(ShapeOf(x, {AttrInt("start", -10), AttrInt("end", 1)}), (std::vector<int64_t>{2}));
  EXPECT_EQ(ShapeOf(x, {AttrInt("start", 3), AttrInt("end", 1)}), (std::vector<int64_t>{}));
  EXPECT_EQ(ShapeOf(x, {AttrInt("start", 4)}), (std::vector<int64_t>{}));
}

TEST(ShapeTest, IsNotDifferentiable) {
  OpRunner runner(OpCase{"Shape", {RandomTensor({2}, 1)}});
  EXPECT_FALSE(runner.kernel().IsDifferentiable(0));
  EXPECT_THROW(RunOp(OpCase{"Shape", {Tensor()}}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
