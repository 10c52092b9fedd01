#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

Tensor Target(const Shape& shape, const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>(shape, values);
}

OpCase Nll(std::vector<Tensor> inputs, const std::string& reduction,
           std::vector<onnx::AttributeProto> extra = {}) {
  extra.push_back(AttrString("reduction", reduction));
  return {"NegativeLogLikelihoodLoss", std::move(inputs), std::move(extra)};
}

// input [N=2, C=3, d=2], target [2, 2] with one ignored entry, weight [3].
Tensor Input() {
  return Tensor::FromVector<float>({2, 3, 2}, {-1.2F, -0.3F, -0.7F, -2.0F, -1.5F, -0.9F, -0.1F,
                                               -1.1F, -2.2F, -0.4F, -0.8F, -1.6F});
}

TEST(NllLossTest, SpatialWeightedWithIgnoreIndexMatchesPyTorch) {
  // torch.nn.functional.nll_loss(x, t, weight=w, ignore_index=-1, reduction=...):
  // none = [[3.0, 0.3], [1.1, 0.0]], sum = 4.4, mean = 4.4 / (2 + 1 + 0.5) = 1.2571429.
  const Tensor target = Target({2, 2}, {2, 0, 1, -1});
  const Tensor weight = Tensor::FromVector<float>({3}, {1, 0.5F, 2});
  const std::vector<onnx::AttributeProto> ignore = {AttrInt("ignore_index", -1)};
  ExpectTensorNear(RunOp(Nll({Input(), target, weight}, "none", ignore))[0], {3, 0.3F, 1.1F, 0},
                   {2, 2});
  ExpectTensorNear(RunOp(Nll({Input(), target, weight}, "sum", ignore))[0], {4.4F}, {});
  ExpectTensorNear(RunOp(Nll({Input(), target, weight}, "mean", ignore))[0], {1.2571429F}, {});
}

TEST(NllLossTest, UnweightedMeanByHand) {
  // Rows pick -0.5 and -2.0: mean of 0.5 and 2.0. The default reduction is mean.
  const Tensor input = Tensor::FromVector<float>({2, 2}, {-0.5F, -1, -3, -2});
  ExpectTensorNear(RunOp({"NegativeLogLikelihoodLoss", {input, Target({2}, {0, 1})}})[0], {1.25F},
                   {});
  // int32 targets are accepted too.
  ExpectTensorNear(
      RunOp({"NegativeLogLikelihoodLoss", {input, Tensor::FromVector<int32_t>({2}, {1, 0})}})[0],
      {2.0F}, {});
}

TEST(NllLossTest, IndexIsIgnoredOnlyWhenGiven) {
  // Without ignore_index, target 0 counts (ONNX); with it, the row is skipped.
  const Tensor input = Tensor::FromVector<float>({2, 2}, {-0.5F, -1, -3, -2});
  const Tensor target = Target({2}, {0, 1});
  ExpectTensorNear(RunOp(Nll({input, target}, "sum"))[0], {2.5F}, {});
  ExpectTensorNear(RunOp(Nll({input, target}, "sum", {AttrInt("ignore_index", 0)}))[0], {2.0F}, {});
}

TEST(NllLossTest, EverythingIgnoredGivesNaNMeanLikePyTorch) {
  const Tensor loss = RunOp(
      Nll({Input(), Target({2, 2}, {-1, -1, -1, -1})}, "mean", {AttrInt("ignore_index", -1)}))[0];
  EXPECT_TRUE(std::isnan(loss.GetAsDouble(0)));
}

TEST(NllLossTest, GradientsForEveryReduction) {
  for (const char* reduction : {"none", "sum", "mean"}) {
    SCOPED_TRACE(reduction);
    // Plain [N, C].
    ExpectGradientsMatch(Nll({RandomTensor({4, 5}, 1), Target({4}, {4, 0, 2, 2})}, reduction));
    // Spatial with weights and an ignored target.
    ExpectGradientsMatch(
        Nll({RandomTensor({2, 3, 2, 2}, 2), Target({2, 2, 2}, {0, 2, 1, 7, 2, 2, 0, 1}),
             RandomTensor({3}, 3, 0.5F, 2.0F)},
            reduction, {AttrInt("ignore_index", 7)}));
  }
}

TEST(NllLossTest, GradientPutsMinusWeightOverDenominatorAtTheTarget) {
  // mean with weights [1, 0.5, 2]: d loss / d x[n, t] = -w_t / (sum of counted weights).
  const Tensor target = Target({2, 2}, {2, 0, 1, -1});
  const Tensor weight = Tensor::FromVector<float>({3}, {1, 0.5F, 2});
  OpRunner runner(Nll({Input(), target, weight}, "mean", {AttrInt("ignore_index", -1)}));
  const OpResult result = runner.ForwardBackward({Input(), target, weight}, {Tensor::Scalar(1)});
  const float d = 3.5F;
  ExpectTensorNear(result.input_grads[0],
                   {0, -1 / d, 0, 0, -2 / d, 0,  // n = 0: targets 2 (d0) and 0 (d1)
                    0, 0, -0.5F / d, 0, 0, 0},   // n = 1: target 1 (d0), d1 ignored
                   {2, 3, 2});
  EXPECT_FALSE(runner.kernel().IsDifferentiable(1));
  EXPECT_FALSE(runner.kernel().IsDifferentiable(2));
  EXPECT_FALSE(runner.kernel().BackwardNeedsInput(0));
}

TEST(NllLossTest, BadInputsAreClearErrors) {
  ExpectNodeError(Nll({RandomTensor({2, 3}, 1), Target({2}, {0, 3})}, "mean"), "outside [0, 3)");
  ExpectNodeError(Nll({RandomTensor({2, 3}, 1), Target({2}, {-1, 0})}, "mean"), "outside");
  ExpectNodeError(Nll({RandomTensor({2, 3}, 1), Target({3}, {0, 1, 2})}, "mean"),
                  "target has shape");
  ExpectNodeError(Nll({RandomTensor({2, 3}, 1), Target({2}, {0, 1}), RandomTensor({2}, 2)}, "mean"),
                  "weight must be");
  ExpectNodeError(Nll({RandomTensor({2, 3}, 1), RandomTensor({2}, 2)}, "mean"), "int64");
  ExpectNodeError(Nll({RandomTensor({3}, 1), Target({}, {0})}, "mean"), "[N, C, ...]");
  EXPECT_THROW(RunOp(Nll({RandomTensor({2, 3}, 1), Target({2}, {0, 1})}, "avg")), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
