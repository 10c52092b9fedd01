#include <vector>

#include "tests/ops/op_test_util.h"
#include "tests/ops/pool_test_util.h"

namespace autodist::ops::testing {
namespace {

// Expected values: PyTorch 1.13, F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=..,
// count_include_pad=..) with x = Pattern({1, 1, 6, 6}, 7, 11, 4). With ceil_mode the last window
// starts on the last row/column and runs past the one padded row/column: with count_include_pad
// its divisor counts the padding but not what lies beyond it.
OpCase AveragePoolCase(bool count_include_pad, bool ceil_mode) {
  return OpCase{"AveragePool",
                {Pattern({1, 1, 6, 6}, 7, 11, 4.0F)},
                {AttrInts("kernel_shape", {3, 3}), AttrInts("strides", {2, 2}),
                 AttrInts("pads", {1, 1, 1, 1}), AttrInt("count_include_pad", count_include_pad),
                 AttrInt("ceil_mode", ceil_mode)}};
}

TEST(AveragePoolTest, ExcludingPaddingMatchesPyTorch) {
  ExpectTensorNear(RunOp(AveragePoolCase(false, false))[0],
                   {0.0625F, 0.1666667F, 0.0F, 0.0F, 0.02777778F, -0.1388889F, -0.08333334F,
                    -0.05555556F, -0.2222222F},
                   {1, 1, 3, 3});
  ExpectTensorNear(
      RunOp(AveragePoolCase(false, true))[0],
      {0.0625F, 0.1666667F, 0.0F, -1.0F, 0.0F, 0.02777778F, -0.1388889F, 0.08333334F, -0.08333334F,
       -0.05555556F, -0.2222222F, 0.0F, -0.125F, -0.25F, -0.4166667F, -0.5F},
      {1, 1, 4, 4});
}

TEST(AveragePoolTest, IncludingPaddingMatchesPyTorch) {
  ExpectTensorNear(RunOp(AveragePoolCase(true, false))[0],
                   {0.02777778F, 0.1111111F, 0.0F, 0.0F, 0.02777778F, -0.1388889F, -0.05555556F,
                    -0.05555556F, -0.2222222F},
                   {1, 1, 3, 3});
  ExpectTensorNear(
      RunOp(AveragePoolCase(true, true))[0],
      {0.02777778F, 0.1111111F, 0.0F, -0.3333333F, 0.0F, 0.02777778F, -0.1388889F, 0.04166667F,
       -0.05555556F, -0.05555556F, -0.2222222F, 0.0F, -0.04166667F, -0.125F, -0.2083333F, -0.125F},
      {1, 1, 4, 4});
}

TEST(AveragePoolTest, AsymmetricPadsByHand) {
  // x = [[1, 2], [3, 4]], 2x2 kernel, stride 1, pads top 1 / left 0 / bottom 0 / right 1:
  // windows (rows -1..0 | 0..1) x (cols 0..1 | 1..2). Excluding padding: [1.5, 2, 2.5, 3];
  // including it, every divisor is 4: [0.75, 0.5, 2.5, 1.5].
  const Tensor x = Tensor::FromVector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::vector<onnx::AttributeProto> window{AttrInts("kernel_shape", {2, 2}),
                                                 AttrInts("pads", {1, 0, 0, 1})};
  ExpectTensorNear(RunOp(OpCase{"AveragePool", {x}, window})[0], {1.5F, 2, 2.5F, 3}, {1, 1, 2, 2});
  std::vector<onnx::AttributeProto> including = window;
  including.push_back(AttrInt("count_include_pad", 1));
  ExpectTensorNear(RunOp(OpCase{"AveragePool", {x}, including})[0], {0.75F, 0.5F, 2.5F, 1.5F},
                   {1, 1, 2, 2});
}

class AveragePoolGradientTest : public ::testing::TestWithParam<PoolConfig> {};

TEST_P(AveragePoolGradientTest, MatchesFiniteDifferences) {
  ExpectGradientsMatch(
      OpCase{"AveragePool", {RandomTensor(GetParam().x, 5)}, GetParam().attributes});
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, AveragePoolGradientTest,
    ::testing::ValuesIn(PoolGeometries(
        {PoolConfig{"PaddedIncludedCeil",
                    {1, 2, 6, 6},
                    {AttrInts("kernel_shape", {3, 3}), AttrInts("strides", {2, 2}),
                     AttrInts("pads", {1, 1, 1, 1}), AttrInt("count_include_pad", 1),
                     AttrInt("ceil_mode", 1)}},
         PoolConfig{"AsymmetricPads",
                    {1, 1, 5, 4},
                    {AttrInts("kernel_shape", {2, 3}), AttrInts("pads", {0, 2, 1, 0}),
                     AttrInt("count_include_pad", 1)}},
         PoolConfig{"SameLower",
                    {1, 2, 5, 6},
                    {AttrInts("kernel_shape", {3, 2}), AttrInts("strides", {2, 2}),
                     AttrString("auto_pad", "SAME_LOWER")}}})),
    PoolConfigName);

TEST(AveragePoolTest, RejectsBadInputs) {
  ExpectNodeError(
      OpCase{"AveragePool", {RandomTensor({1, 2, 8}, 1)}, {AttrInts("kernel_shape", {2, 2})}},
      "only 2-D pooling");
  ExpectNodeError(OpCase{"AveragePool", {RandomTensor({1, 2, 4, 4}, 1)}},
                  "'kernel_shape' is required");
  ExpectNodeError(OpCase{"AveragePool",
                         {RandomTensor({1, 2, 4, 4}, 1)},
                         {AttrInts("kernel_shape", {2, 2}), AttrInts("dilations", {2, 2})}},
                  "no dilations");
  ExpectNodeError(
      OpCase{"AveragePool", {RandomTensor({1, 2, 4, 4}, 1)}, {AttrInts("kernel_shape", {3, 5})}},
      "input width 4 (+0 +0) is smaller than the window extent 5");
}

TEST(GlobalAveragePoolTest, AveragesEachPlane) {
  // Planes [1, 2, 3, 4] and [-2, 0, 2, 8]: means 2.5 and 2.
  OpCase op{"GlobalAveragePool",
            {Tensor::FromVector<float>({1, 2, 2, 2}, {1, 2, 3, 4, -2, 0, 2, 8})}};
  ExpectTensorNear(RunOp(op)[0], {2.5F, 2.0F}, {1, 2, 1, 1});
  // Any number of spatial axes: [N, C, L] -> [N, C, 1].
  OpCase one_d{"GlobalAveragePool", {Tensor::FromVector<float>({2, 1, 3}, {1, 2, 6, 0, 0, 3})}};
  ExpectTensorNear(RunOp(one_d)[0], {3.0F, 1.0F}, {2, 1, 1});
}

TEST(GlobalAveragePoolTest, GradientMatchesFiniteDifferences) {
  ExpectGradientsMatch(OpCase{"GlobalAveragePool", {RandomTensor({2, 3, 4, 5}, 7)}});
  ExpectGradientsMatch(OpCase{"GlobalAveragePool", {RandomTensor({2, 3, 2, 2, 3}, 8)}});
}

TEST(GlobalAveragePoolTest, RejectsInputWithoutSpatialAxes) {
  ExpectNodeError(OpCase{"GlobalAveragePool", {RandomTensor({2, 3}, 1)}},
                  "X must be float32 [N, C, D1, ...]");
}

}  // namespace
}  // namespace autodist::ops::testing
