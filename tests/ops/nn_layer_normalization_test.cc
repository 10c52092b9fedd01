#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

// Expected values: PyTorch 1.13, torch.native_layer_norm(x, normalized_shape, w, b, eps), which
// returns Y, mean and rstd (= InvStdDev), with x = Pattern({2, 3, 4}, 7, 11).

TEST(LayerNormalizationTest, LastAxisMatchesPyTorch) {
  // normalized_shape [4], w [1, -0.5, 2, 0.25], b [0.1, 0, -0.2, 0.3], eps 1e-5.
  OpCase op{"LayerNormalization",
            {Pattern({2, 3, 4}, 7, 11), Tensor::FromVector<float>({4}, {1.0F, -0.5F, 2.0F, 0.25F}),
             Tensor::FromVector<float>({4}, {0.1F, 0.0F, -0.2F, 0.3F})},
            {},
            3};
  const std::vector<Tensor> out = RunOp(op);
  ExpectTensorNear(out[0],
                   {-1.213057F, -0.2626114F, -1.250446F,  0.6282643F, 0.2999974F,  0.699991F,
                    2.599964F,  0.2500007F,  -0.6228914F, -0.763052F, 0.2819276F,  0.0389559F,
                    0.2999974F, 0.699991F,   2.599964F,   0.2500007F, -0.6228914F, -0.763052F,
                    0.2819276F, 0.0389559F,  1.144176F,   0.1204819F, -3.252208F,  0.4807228F},
                   {2, 3, 4});
  ExpectTensorNear(out[1], {0.0F, 0.125F, -0.4375F, 0.375F, -0.1875F, -0.0625F}, {2, 3, 1});
  ExpectTensorNear(out[2], {1.050446F, 1.599979F, 1.28514F, 1.599979F, 1.28514F, 1.28514F},
                   {2, 3, 1});
}

TEST(LayerNormalizationTest, InnerAxesWithoutBiasMatchPyTorch) {
  // normalized_shape [3, 4] (axis 1), w = Pattern({3, 4}, 5, 13), no bias, eps 1e-3.
  OpCase op{"LayerNormalization",
            {Pattern({2, 3, 4}, 7, 11), Pattern({3, 4}, 5, 13)},
            {AttrInt("axis", 1), AttrFloat("epsilon", 1e-3F)},
            3};
  const std::vector<Tensor> out = RunOp(op);
  ExpectTensorNear(out[0],
                   {2.06424F,    -0.1814029F, -0.4754007F, -1.626371F,  0.1063396F,  -1.163481F,
                    -0.6630589F, 0.0938291F,  1.344883F,   0.0F,        -0.2189345F, 1.03212F,
                    -0.8927714F, 0.1758489F,  1.569113F,   -0.2705368F, -0.25701F,   1.866704F,
                    0.02705368F, -1.014513F,  -1.149781F,  0.0F,        -2.09666F,   -0.4463857F},
                   {2, 3, 4});
  ExpectTensorNear(out[1], {-0.1041667F, 0.04166667F}, {2, 1, 1});
  ExpectTensorNear(out[2], {1.201012F, 1.298577F}, {2, 1, 1});
}

TEST(LayerNormalizationTest, ScaleAndBiasBroadcastOverTheNormalizedShape) {
  // Rows [1, 3] and [0, 2] both have variance 1 and normalize to [-1, 1] (epsilon 0); Scale [1]
  // = 2 and B [1] = 1 broadcast over the row: y = [-1, 3] for both (worked by hand).
  OpCase op{"LayerNormalization",
            {Tensor::FromVector<float>({2, 2}, {1, 3, 0, 2}), Tensor::Full({1}, 2.0F),
             Tensor::Full({1}, 1.0F)},
            {AttrFloat("epsilon", 0.0F)}};
  ExpectTensorNear(RunOp(op)[0], {-1, 3, -1, 3}, {2, 2});
}

struct GradientConfig {
  std::string name;
  Shape x;
  int64_t axis;
  Shape scale;
  bool bias;
};

class LayerNormGradientTest : public ::testing::TestWithParam<GradientConfig> {};

TEST_P(LayerNormGradientTest, MatchesFiniteDifferences) {
  const GradientConfig& config = GetParam();
  // All three outputs are weighted: the gradients through Mean and InvStdDev are checked too.
  ExpectGradientsMatch(OpCase{"LayerNormalization",
                              {RandomTensor(config.x, 1), RandomTensor(config.scale, 2),
                               config.bias ? RandomTensor(config.scale, 3) : Tensor()},
                              {AttrInt("axis", config.axis)},
                              3});
}

INSTANTIATE_TEST_SUITE_P(
    Axes, LayerNormGradientTest,
    ::testing::Values(GradientConfig{"LastAxis", {3, 5}, -1, {5}, true},
                      GradientConfig{"TwoAxes", {2, 3, 4}, 1, {3, 4}, true},
                      GradientConfig{"NegativeAxisNoBias", {2, 3, 4}, -2, {3, 4}, false},
                      GradientConfig{"WholeTensor", {2, 3}, 0, {2, 3}, true},
                      GradientConfig{"ScaleBroadcastRows", {2, 3, 4}, 1, {1, 4}, true},
                      GradientConfig{"ScaleBroadcastLastDim", {2, 3, 4}, -2, {4}, false}),
    [](const auto& test) { return test.param.name; });

TEST(LayerNormalizationTest, RejectsBadInputs) {
  ExpectNodeError(OpCase{"LayerNormalization",
                         {RandomTensor({2, 3}, 1), RandomTensor({3}, 2)},
                         {AttrInt("axis", 3)}},
                  "axis 3 is out of range for X of rank 2");
  ExpectNodeError(OpCase{"LayerNormalization", {RandomTensor({2, 3}, 1), RandomTensor({2}, 2)}},
                  "Scale of shape [2] does not broadcast to the normalized shape [3]");
  ExpectNodeError(OpCase{"LayerNormalization",
                         {RandomTensor({2, 3}, 1), RandomTensor({3}, 2), RandomTensor({2, 3}, 3)}},
                  "B of shape [2, 3] does not broadcast");
  ExpectNodeError(OpCase{"LayerNormalization",
                         {RandomTensor({2, 3}, 1), RandomTensor({3}, 2)},
                         {AttrInt("stash_type", 11)}},
                  "only stash_type 1");
}

}  // namespace
}  // namespace autodist::ops::testing
