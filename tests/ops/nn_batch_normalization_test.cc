#include <string>
#include <utility>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

// The PyTorch reference case: x = Pattern({2, 3, 2, 2}, 7, 11), weight [1.5, -0.5, 2],
// bias [0.1, 0.2, -0.3], running_mean [0.5, -1, 0], running_var [2, 0.5, 1], eps 1e-5,
// PyTorch momentum 0.1 (ONNX momentum 0.9); dY = Pattern({2, 3, 2, 2}, 5, 13).
std::vector<Tensor> ReferenceInputs() {
  return {Pattern({2, 3, 2, 2}, 7, 11), Tensor::FromVector<float>({3}, {1.5F, -0.5F, 2.0F}),
          Tensor::FromVector<float>({3}, {0.1F, 0.2F, -0.3F}),
          Tensor::FromVector<float>({3}, {0.5F, -1.0F, 0.0F}),
          Tensor::FromVector<float>({3}, {2.0F, 0.5F, 1.0F})};
}

OpCase BatchNormCase(std::vector<Tensor> inputs, int64_t opset, size_t outputs, bool training_mode,
                     bool session_training = true) {
  OpCase op{"BatchNormalization",
            std::move(inputs),
            {AttrFloat("epsilon", 1e-5F), AttrFloat("momentum", 0.9F)},
            outputs,
            opset,
            session_training};
  if (opset >= 14) op.attributes.push_back(AttrInt("training_mode", training_mode));
  return op;
}

// PyTorch 1.13, F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5), then
// y.backward(dY): Y, the updated running statistics, dX, dweight, dbias.
const std::vector<float> kTrainY = {-2.507936F, 0.6669425F,  -1.147274F,  2.027605F,  0.005449891F,
                                    0.6971836F, -0.5133504F, 0.1783833F,  -2.174071F, 2.198761F,
                                    -0.3F,      -2.798761F,  0.6669425F,  -1.147274F, 2.027605F,
                                    0.2133885F, 0.6971836F,  -0.5133504F, 0.1783833F, 0.8701171F,
                                    2.198761F,  -0.3F,       -2.798761F,  1.57407F};
const std::vector<float> kTrainRunningMean = {0.46875F, -0.903125F, -0.025F};
const std::vector<float> kTrainRunningVar = {1.878125F, 0.5097098F, 0.9732143F};

TEST(BatchNormalizationTest, TrainingMatchesPyTorch) {
  const std::vector<Tensor> out = RunOp(BatchNormCase(ReferenceInputs(), 15, 3, true));
  ExpectTensorNear(out[0], kTrainY, {2, 3, 2, 2});
  // The running variance is updated with the unbiased batch variance, as PyTorch does.
  ExpectTensorNear(out[1], kTrainRunningMean, {3});
  ExpectTensorNear(out[2], kTrainRunningVar, {3});
}

TEST(BatchNormalizationTest, TrainingBackwardMatchesPyTorch) {
  OpCase op = BatchNormCase(ReferenceInputs(), 15, 3, true);
  OpRunner runner(op);
  const OpResult result =
      runner.ForwardBackward(op.inputs, {Pattern({2, 3, 2, 2}, 5, 13), Tensor(), Tensor()});
  ExpectTensorNear(result.input_grads[0],
                   {-1.641875F,  -0.1360642F, 2.567111F,   -1.823281F, 0.02198032F, -0.8439798F,
                    0.5417503F,  -0.3242098F, -1.889326F,  -1.6455F,   3.123451F,   -0.2285709F,
                    1.224598F,   -1.968429F,  -0.4626183F, 2.240557F,  0.8853545F,  0.02295002F,
                    -0.8430101F, 0.5391644F,  0.2285709F,  -3.123451F, 1.6455F,     1.889326F},
                   {2, 3, 2, 2}, 2e-5F);
  ExpectTensorNear(result.input_grads[1], {1.587439F, 0.01080834F, 4.216659F}, {3}, 2e-5F);
  ExpectTensorNear(result.input_grads[2], {-2.0F, 2.25F, 0.0F}, {3});
  // The running statistics get no gradient.
  EXPECT_FALSE(result.input_grads[3].defined());
  EXPECT_FALSE(result.input_grads[4].defined());
}

TEST(BatchNormalizationTest, RunningStatisticsFollowPyTorchByHand) {
  // One channel holding 1, 2, 3, 4: mean 2.5, biased variance 1.25, unbiased 5/3. With input
  // running mean 0, var 1 and ONNX momentum 0.9 (PyTorch 0.1):
  //   running_mean = 0.9 * 0 + 0.1 * 2.5 = 0.25
  //   running_var  = 0.9 * 1 + 0.1 * 5/3 = 1.0666667
  // and Y = (x - 2.5) / sqrt(1.25 + 1e-5) normalizes with the biased variance.
  const std::vector<Tensor> out = RunOp(
      BatchNormCase({Tensor::FromVector<float>({2, 1, 1, 2}, {1, 2, 3, 4}), Tensor::Full({1}, 1.0F),
                     Tensor::Full({1}, 0.0F), Tensor::Full({1}, 0.0F), Tensor::Full({1}, 1.0F)},
                    15, 3, true));
  ExpectTensorNear(out[0], {-1.3416354F, -0.4472118F, 0.4472118F, 1.3416354F}, {2, 1, 1, 2});
  ExpectTensorNear(out[1], {0.25F}, {1});
  ExpectTensorNear(out[2], {1.0666667F}, {1});
}

// PyTorch 1.13, F.batch_norm(..., training=False) on the reference case, and its backward.
const std::vector<float> kEvalY = {-1.756151F,  0.09999999F, -0.9606575F, 0.8954931F,  -0.6838746F,
                                   0.02322507F, -1.214199F,  -0.5070997F, -2.29999F,   1.199992F,
                                   -0.7999975F, -2.799988F,  0.09999999F, -0.9606575F, 0.8954931F,
                                   -0.1651644F, 0.02322507F, -1.214199F,  -0.5070997F, 0.2F,
                                   1.199992F,   -0.7999975F, -2.799988F,  0.699995F};

TEST(BatchNormalizationTest, InferenceMatchesPyTorch) {
  // training_mode 0: the node was exported for inference, so even a training session uses
  // input_mean / input_var, and the extra outputs (if any) pass them through.
  OpCase op = BatchNormCase(ReferenceInputs(), 15, 1, false);
  OpRunner runner(op);
  const OpResult result = runner.ForwardBackward(op.inputs, {Pattern({2, 3, 2, 2}, 5, 13)});
  ExpectTensorNear(result.outputs[0], kEvalY, {2, 3, 2, 2});
  ExpectTensorNear(result.input_grads[0],
                   {-1.590986F, -0.2651644F, 1.060658F,   -1.060658F, -0.1767749F, -1.06065F,
                    0.3535499F, -0.5303248F, -2.499988F,  0.0F,       2.499988F,   -1.499992F,
                    0.5303288F, -1.590986F,  -0.2651644F, 1.060658F,  0.7070997F,  -0.1767749F,
                    -1.06065F,  0.3535499F,  1.499992F,   -2.499988F, 0.0F,        2.499988F},
                   {2, 3, 2, 2});
  ExpectTensorNear(result.input_grads[1], {1.370016F, 3.093561F, 3.374983F}, {3});
  ExpectTensorNear(result.input_grads[2], {-2.0F, 2.25F, 0.0F}, {3});
}

TEST(BatchNormalizationTest, TrainingNodeInAnInferenceSessionUsesInputStatistics) {
  const std::vector<Tensor> inputs = ReferenceInputs();
  const std::vector<Tensor> out =
      RunOp(BatchNormCase(inputs, 14, 3, true, /*session_training=*/false));
  ExpectTensorNear(out[0], kEvalY, {2, 3, 2, 2});
  ExpectTensorNear(out[1], {0.5F, -1.0F, 0.0F}, {3});
  ExpectTensorNear(out[2], {2.0F, 0.5F, 1.0F}, {3});
}

TEST(BatchNormalizationTest, Opset13TrainingFormHasFiveOutputs) {
  // Before opset 14 the five outputs mark training; saved_mean and saved_var are the batch
  // mean and the biased batch variance (PyTorch: x.mean((0, 2, 3)), x.var((0, 2, 3),
  // unbiased=False)).
  const std::vector<Tensor> out = RunOp(BatchNormCase(ReferenceInputs(), 13, 5, true));
  ExpectTensorNear(out[0], kTrainY, {2, 3, 2, 2});
  ExpectTensorNear(out[1], kTrainRunningMean, {3});
  ExpectTensorNear(out[2], kTrainRunningVar, {3});
  ExpectTensorNear(out[3], {0.1875F, -0.03125F, -0.25F}, {3});
  ExpectTensorNear(out[4], {0.6835938F, 0.5224609F, 0.640625F}, {3});
}

TEST(BatchNormalizationTest, Opset13SingleOutputIsInference) {
  ExpectTensorNear(RunOp(BatchNormCase(ReferenceInputs(), 13, 1, false))[0], kEvalY, {2, 3, 2, 2});
}

TEST(BatchNormalizationTest, WritesRunningStatisticsBackIntoTheirInputs) {
  OpRunner runner(BatchNormCase(ReferenceInputs(), 15, 3, true));
  using Updates = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(runner.kernel().StateUpdates(), (Updates{{1, 3}, {2, 4}}));
  EXPECT_FALSE(runner.kernel().IsDifferentiable(3));
  EXPECT_FALSE(runner.kernel().IsDifferentiable(4));
}

struct GradientConfig {
  std::string name;
  Shape x;
  int64_t opset;
  size_t outputs;
  bool training_mode;
};

class BatchNormGradientTest : public ::testing::TestWithParam<GradientConfig> {};

TEST_P(BatchNormGradientTest, MatchesFiniteDifferences) {
  const GradientConfig& config = GetParam();
  const int64_t c = config.x[1];
  // Every output is weighted, so with several outputs the gradient through the statistics
  // outputs is checked too.
  ExpectGradientsMatch(
      BatchNormCase({RandomTensor(config.x, 1), RandomTensor({c}, 2, 0.5F, 1.5F),
                     RandomTensor({c}, 3), RandomTensor({c}, 4), RandomTensor({c}, 5, 0.5F, 2.0F)},
                    config.opset, config.outputs, config.training_mode));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, BatchNormGradientTest,
    ::testing::Values(GradientConfig{"Training", {3, 2, 2, 3}, 15, 1, true},
                      GradientConfig{"TrainingWithRunningStats", {2, 3, 2, 2}, 15, 3, true},
                      GradientConfig{"TrainingOpset13AllOutputs", {2, 2, 3, 2}, 13, 5, true},
                      GradientConfig{"TrainingRank2", {5, 3}, 14, 1, true},
                      GradientConfig{"TrainingRank3", {2, 3, 4}, 15, 1, true},
                      GradientConfig{"Inference", {2, 3, 2, 2}, 15, 1, false},
                      GradientConfig{"InferenceOpset13", {2, 3, 3}, 13, 1, false}),
    [](const auto& test) { return test.param.name; });

TEST(BatchNormalizationTest, RejectsBadInputs) {
  std::vector<Tensor> inputs = ReferenceInputs();
  inputs[1] = Tensor::Full({4}, 1.0F);
  ExpectNodeError(BatchNormCase(inputs, 15, 1, true),
                  "scale must be float32 [3] (one per channel of X [2, 3, 2, 2]), got float32 [4]");
  inputs = ReferenceInputs();
  inputs[4] = Tensor::Full({3, 1}, 1.0F);
  ExpectNodeError(BatchNormCase(inputs, 15, 1, true), "input_var must be float32 [3]");
  inputs = ReferenceInputs();
  inputs[0] = Tensor::Full({3}, 1.0F);
  ExpectNodeError(BatchNormCase(inputs, 15, 1, true), "X must be float32 [N, C, ...]");
  inputs = ReferenceInputs();
  inputs[0] = Tensor::Full({1, 3, 1, 1}, 1.0F);
  ExpectNodeError(BatchNormCase(inputs, 15, 3, true), "more than one value per channel");
  ExpectNodeError(BatchNormCase(ReferenceInputs(), 15, 5, true), "at most 3 outputs");
}

}  // namespace
}  // namespace autodist::ops::testing
