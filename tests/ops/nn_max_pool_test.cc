#include <cmath>
#include <limits>
#include <vector>

#include "tests/ops/op_test_util.h"
#include "tests/ops/pool_test_util.h"

namespace autodist::ops::testing {
namespace {

Tensor Distinct(const Shape& shape) {
  const int64_t n = tensor::NumElements(shape);
  return Pattern(shape, n % 7 == 0 ? 11 : 7, n, 20.0F);
}

void ExpectIndices(const Tensor& actual, const std::vector<int64_t>& expected, const Shape& shape) {
  ASSERT_EQ(actual.dtype(), DType::kInt64);
  ASSERT_EQ(actual.shape(), shape);
  EXPECT_EQ(actual.ToInt64Vector("indices"), expected);
}

// Expected values: PyTorch 1.13, F.max_pool2d(x, ..., return_indices=True) with x =
// Pattern({1, 2, 5, 5}, 7, 50, 8); PyTorch's per-plane indices were turned into ONNX's flat ones
// by adding plane * 25.
const Tensor& PoolInput() {
  static const Tensor x = Pattern({1, 2, 5, 5}, 7, 50, 8.0F);
  return x;
}

TEST(MaxPoolTest, FloorModeMatchesPyTorch) {
  OpCase op{
      "MaxPool", {PoolInput()}, {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2})}, 2};
  const std::vector<Tensor> out = RunOp(op);
  ExpectTensorNear(out[0], {2.125F, 3.0F, 0.25F, 2.0F, 0.875F, 2.625F, 2.5F, 2.375F}, {1, 2, 2, 2});
  ExpectIndices(out[1], {6, 7, 11, 13, 26, 28, 35, 42}, {1, 2, 2, 2});
}

TEST(MaxPoolTest, CeilModeMatchesPyTorch) {
  OpCase op{
      "MaxPool",
      {PoolInput()},
      {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2}), AttrInt("ceil_mode", 1)},
      2};
  const std::vector<Tensor> out = RunOp(op);
  ExpectTensorNear(out[0],
                   {2.125F, 3.0F, 0.375F, 0.25F, 2.0F, 2.875F, 2.75F, -1.75F, -0.875F, 0.875F,
                    2.625F, 1.625F, 2.5F, 2.375F, -0.25F, -0.375F, 1.375F, 2.25F},
                   {1, 2, 3, 3});
  ExpectIndices(out[1], {6, 7, 4, 11, 13, 14, 21, 23, 24, 26, 28, 34, 35, 42, 39, 46, 48, 49},
                {1, 2, 3, 3});
}

TEST(MaxPoolTest, DilatedPaddedMatchesPyTorch) {
  // F.max_pool2d(x[:, :1], 2, stride=1, padding=1, dilation=2): the first plane of PoolInput.
  OpCase op{"MaxPool",
            {Pattern({1, 1, 5, 5}, 7, 50, 8.0F)},
            {AttrInts("kernel_shape", {2, 2}), AttrInts("pads", {1, 1, 1, 1}),
             AttrInts("dilations", {2, 2})},
            2};
  const std::vector<Tensor> out = RunOp(op);
  ExpectTensorNear(out[0],
                   {2.125F, 3.0F,   2.125F,  3.0F,   -2.375F, 0.25F,  1.125F, 2.0F,   2.875F,
                    2.0F,   2.125F, 3.0F,    2.125F, 3.0F,    0.125F, 2.75F,  1.875F, 2.75F,
                    2.875F, 2.0F,   -1.625F, -0.75F, 0.125F,  1.0F,   0.125F},
                   {1, 1, 5, 5});
  ExpectIndices(out[1], {6, 7,  6,  7,  8,  11, 12, 13, 14, 13, 6,  7, 6,
                         7, 18, 21, 20, 21, 14, 13, 16, 17, 18, 19, 18},
                {1, 1, 5, 5});
}

TEST(MaxPoolTest, ColumnMajorIndices) {
  // storage_order = 1: index = plane * H * W + w * H + h. The floor-mode maxima sit at
  // (h, w) = (1, 1), (1, 2), (2, 1), (2, 3) in plane 0 and (0, 1), (0, 3), (2, 0), (3, 2) in
  // plane 1.
  OpCase op{
      "MaxPool",
      {PoolInput()},
      {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2}), AttrInt("storage_order", 1)},
      2};
  ExpectIndices(RunOp(op)[1], {6, 11, 7, 17, 30, 40, 27, 38}, {1, 2, 2, 2});
}

TEST(MaxPoolTest, TiesRouteTheGradientToTheFirstMaximum) {
  // All equal: like PyTorch, the first element of each window (row-major) is the argmax.
  OpCase op{"MaxPool",
            {Tensor::Full({1, 1, 2, 4}, 1.0F)},
            {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2})},
            2};
  OpRunner runner(op);
  const OpResult result =
      runner.ForwardBackward(op.inputs, {Tensor::FromVector<float>({1, 1, 1, 2}, {3, 5})});
  ExpectIndices(result.outputs[1], {0, 2}, {1, 1, 1, 2});
  ExpectTensorNear(result.input_grads[0], {3, 0, 5, 0, 0, 0, 0, 0}, {1, 1, 2, 4});
}

TEST(MaxPoolTest, NaNWinsAsInPyTorch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  OpCase op{"MaxPool",
            {Tensor::FromVector<float>({1, 1, 2, 2}, {1, nan, 3, 2})},
            {AttrInts("kernel_shape", {2, 2})},
            2};
  const std::vector<Tensor> out = RunOp(op);
  EXPECT_TRUE(std::isnan(out[0].data<float>()[0]));
  ExpectIndices(out[1], {1}, {1, 1, 1, 1});
}

TEST(MaxPoolTest, WindowWhollyInPaddingGivesMinusInfinityAndNoGradient) {
  OpCase op{"MaxPool",
            {Tensor::FromVector<float>({1, 1, 1, 1}, {4})},
            {AttrInts("kernel_shape", {1, 1}), AttrInts("pads", {1, 1, 1, 1})},
            2};
  OpRunner runner(op);
  const OpResult result = runner.ForwardBackward(op.inputs, {Tensor::Full({1, 1, 3, 3}, 1.0F)});
  for (int64_t i = 0; i < 9; ++i) {
    const float value = result.outputs[0].data<float>()[i];
    if (i == 4) {
      EXPECT_EQ(value, 4.0F);
    } else {
      EXPECT_EQ(value, -std::numeric_limits<float>::infinity()) << "element " << i;
    }
  }
  ExpectIndices(result.outputs[1], {-1, -1, -1, -1, 0, -1, -1, -1, -1}, {1, 1, 3, 3});
  ExpectTensorNear(result.input_grads[0], {1}, {1, 1, 1, 1});
}

class MaxPoolGradientTest : public ::testing::TestWithParam<PoolConfig> {};

TEST_P(MaxPoolGradientTest, MatchesFiniteDifferences) {
  ExpectGradientsMatch(OpCase{"MaxPool", {Distinct(GetParam().x)}, GetParam().attributes});
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, MaxPoolGradientTest,
    ::testing::ValuesIn(
        PoolGeometries({PoolConfig{"CeilMode",
                                   {1, 2, 5, 5},
                                   {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2}),
                                    AttrInt("ceil_mode", 1)}},
                        PoolConfig{"DilatedAsymmetricPads",
                                   {1, 1, 6, 5},
                                   {AttrInts("kernel_shape", {2, 2}), AttrInts("dilations", {2, 2}),
                                    AttrInts("pads", {1, 0, 0, 1})}},
                        PoolConfig{"SameUpper",
                                   {1, 2, 5, 6},
                                   {AttrInts("kernel_shape", {3, 3}), AttrInts("strides", {2, 2}),
                                    AttrString("auto_pad", "SAME_UPPER")}},
                        PoolConfig{"SameLowerRectangular",
                                   {1, 1, 5, 7},
                                   {AttrInts("kernel_shape", {2, 3}), AttrInts("strides", {1, 2}),
                                    AttrString("auto_pad", "SAME_LOWER")}}})),
    PoolConfigName);

TEST(MaxPoolTest, RejectsBadInputs) {
  const std::vector<onnx::AttributeProto> k2{AttrInts("kernel_shape", {2, 2})};
  ExpectNodeError(OpCase{"MaxPool", {RandomTensor({1, 2, 8}, 1)}, k2}, "only 2-D pooling");
  ExpectNodeError(OpCase{"MaxPool", {RandomTensor({1, 2, 4, 4}, 1)}}, "'kernel_shape' is required");
  ExpectNodeError(OpCase{"MaxPool",
                         {RandomTensor({1, 2, 4, 4}, 1)},
                         {AttrInts("kernel_shape", {2, 2}), AttrInts("pads", {1, 1})}},
                  "'pads' must have 4 values");
  ExpectNodeError(
      OpCase{"MaxPool", {RandomTensor({1, 2, 4, 4}, 1)}, {AttrInts("kernel_shape", {5, 2})}},
      "smaller than the window");
  ExpectNodeError(
      OpCase{"MaxPool", {RandomTensor({1, 2, 4, 4}, 1)}, {AttrInts("kernel_shape", {2, 0})}},
      "'kernel_shape' values must be >= 1");
}

}  // namespace
}  // namespace autodist::ops::testing
