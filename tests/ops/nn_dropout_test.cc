#include <random>
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

Tensor Ratio(float ratio) { return Tensor::Scalar(ratio); }
Tensor Mode(bool training) { return Tensor::FromVector<bool>({}, {training}); }

// Runs Dropout with a caller-owned random engine (OpRunner re-seeds its own every call).
std::vector<Tensor> RunWithEngine(const OpCase& op, std::mt19937_64& rng) {
  onnx::NodeProto node;
  node.set_op_type(op.op_type);
  node.set_name("test_Dropout");
  for (size_t i = 0; i < op.inputs.size(); ++i) node.add_input("in" + std::to_string(i));
  for (size_t o = 0; o < op.num_outputs; ++o) node.add_output("out" + std::to_string(o));
  for (const auto& attribute : op.attributes) *node.add_attribute() = attribute;
  const NodeInfo info(node, op.opset);
  const std::unique_ptr<OpKernel> kernel = KernelRegistry::Global().Create(info);
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : op.inputs) inputs.push_back(&t);
  ForwardContext ctx(inputs, op.num_outputs, op.training, &rng, &info);
  kernel->Forward(ctx);
  return ctx.take_outputs();
}

// Fraction of true elements of a bool mask.
double KeptFraction(const Tensor& mask) {
  EXPECT_EQ(mask.dtype(), DType::kBool);
  const bool* m = mask.data<bool>();
  int64_t kept = 0;
  for (int64_t i = 0; i < mask.numel(); ++i) kept += m[i] ? 1 : 0;
  return static_cast<double>(kept) / static_cast<double>(mask.numel());
}

TEST(DropoutTest, InferenceSessionPassesDataThrough) {
  const Tensor x = RandomTensor({4, 5}, 1);
  OpCase op{"Dropout", {x, Ratio(0.5F), Mode(true)}, {}, 2, 17, /*training=*/false};
  const std::vector<Tensor> out = RunOp(op);
  EXPECT_TRUE(out[0].SharesStorageWith(x));
  EXPECT_EQ(out[0].shape(), x.shape());
  EXPECT_EQ(KeptFraction(out[1]), 1.0);
}

TEST(DropoutTest, TrainingModeFalsePassesDataThrough) {
  const Tensor x = RandomTensor({4, 5}, 1);
  const std::vector<Tensor> out = RunOp(OpCase{"Dropout", {x, Ratio(0.5F), Mode(false)}, {}, 2});
  EXPECT_TRUE(out[0].SharesStorageWith(x));
  EXPECT_EQ(KeptFraction(out[1]), 1.0);
}

TEST(DropoutTest, TrainingDropsWithTheRatioAndScalesTheRest) {
  // 10^5 elements kept with probability 0.75: the kept fraction has standard deviation 0.0014.
  const Tensor x = Tensor::Full({100, 1000}, 2.0F);
  const std::vector<Tensor> out = RunOp(OpCase{"Dropout", {x, Ratio(0.25F), Mode(true)}, {}, 2});
  EXPECT_NEAR(KeptFraction(out[1]), 0.75, 0.01);
  const float* y = out[0].data<float>();
  const bool* mask = out[1].data<bool>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_FLOAT_EQ(y[i], mask[i] ? 2.0F / 0.75F : 0.0F) << "element " << i;
  }
}

TEST(DropoutTest, AbsentTrainingModeFollowsTheSessionAndRatioDefaultsToHalf) {
  const std::vector<Tensor> out = RunOp(OpCase{"Dropout", {Tensor::Full({100000}, 1.0F)}, {}, 2});
  EXPECT_NEAR(KeptFraction(out[1]), 0.5, 0.01);
}

TEST(DropoutTest, MaskDependsOnlyOnTheEngineState) {
  const OpCase op{"Dropout", {Tensor::Full({4096}, 1.0F), Ratio(0.5F), Mode(true)}, {}, 2};
  std::mt19937_64 first(42);
  std::mt19937_64 second(42);
  std::mt19937_64 other(43);
  const Tensor mask = RunWithEngine(op, first)[1];
  const std::vector<bool> a(mask.data<bool>(), mask.data<bool>() + mask.numel());
  const Tensor same = RunWithEngine(op, second)[1];
  EXPECT_EQ(a, std::vector<bool>(same.data<bool>(), same.data<bool>() + same.numel()));
  const Tensor different = RunWithEngine(op, other)[1];
  EXPECT_NE(a, std::vector<bool>(different.data<bool>(), different.data<bool>() + 4096));
  // The engine advanced: the next step draws a new mask.
  const Tensor next = RunWithEngine(op, first)[1];
  EXPECT_NE(a, std::vector<bool>(next.data<bool>(), next.data<bool>() + 4096));
  // Each call drew exactly one value from the engine, whatever the tensor size.
  EXPECT_EQ(first, [] {
    std::mt19937_64 engine(42);
    engine.discard(2);
    return engine;
  }());
}

TEST(DropoutTest, BackwardAppliesTheForwardMask) {
  OpCase op{"Dropout", {RandomTensor({3, 50}, 2), Ratio(0.4F), Mode(true)}, {}, 2};
  OpRunner runner(op);
  const OpResult result = runner.ForwardBackward(op.inputs, {Tensor::Full({3, 50}, 1.0F)});
  const bool* mask = result.outputs[1].data<bool>();
  const float* dx = result.input_grads[0].data<float>();
  for (int64_t i = 0; i < 150; ++i) {
    EXPECT_FLOAT_EQ(dx[i], mask[i] ? 1.0F / 0.6F : 0.0F) << "element " << i;
  }
  EXPECT_FALSE(result.input_grads[1].defined());
  EXPECT_FALSE(runner.kernel().IsDifferentiable(1));
  EXPECT_FALSE(runner.kernel().IsDifferentiable(2));
}

TEST(DropoutTest, GradientMatchesFiniteDifferences) {
  // OpRunner re-seeds the engine for every forward, so the mask is the same in each evaluation.
  ExpectGradientsMatch(OpCase{"Dropout", {RandomTensor({4, 6}, 3), Ratio(0.3F), Mode(true)}});
  ExpectGradientsMatch(
      OpCase{"Dropout", {RandomTensor({4, 6}, 3), Ratio(0.3F), Mode(true)}, {}, 1, 17, false});
}

TEST(DropoutTest, Opset10TakesTheRatioAsAnAttribute) {
  const std::vector<Tensor> out =
      RunOp(OpCase{"Dropout", {Tensor::Full({100000}, 1.0F)}, {AttrFloat("ratio", 0.2F)}, 2, 10});
  EXPECT_NEAR(KeptFraction(out[1]), 0.8, 0.01);
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], out[1].data<bool>()[0] ? 1.25F : 0.0F);
}

TEST(DropoutTest, RatioZeroKeepsAndRatioOneDropsEverything) {
  const Tensor x = RandomTensor({10, 10}, 4);
  const std::vector<Tensor> kept = RunOp(OpCase{"Dropout", {x, Ratio(0.0F), Mode(true)}, {}, 2});
  EXPECT_TRUE(kept[0].SharesStorageWith(x));
  EXPECT_EQ(KeptFraction(kept[1]), 1.0);
  const std::vector<Tensor> dropped = RunOp(OpCase{"Dropout", {x, Ratio(1.0F), Mode(true)}, {}, 2});
  EXPECT_EQ(KeptFraction(dropped[1]), 0.0);
  ExpectTensorNear(dropped[0], std::vector<float>(100, 0.0F), {10, 10});
}

TEST(DropoutTest, RejectsBadInputs) {
  ExpectNodeError(OpCase{"Dropout", {RandomTensor({3}, 1), Ratio(1.5F)}},
                  "ratio must be in [0, 1], got 1.5");
  ExpectNodeError(OpCase{"Dropout", {RandomTensor({3}, 1), RandomTensor({2}, 2)}},
                  "ratio must be a float scalar");
  ExpectNodeError(
      OpCase{"Dropout",
             {RandomTensor({3}, 1), Ratio(0.5F), Tensor::FromVector<bool>({2}, {true, false})}},
      "training_mode must be a scalar");
  ExpectNodeError(OpCase{"Dropout", {Tensor::FromVector<int64_t>({2}, {1, 2})}},
                  "data must be float32");
  ExpectNodeError(OpCase{"Dropout", {RandomTensor({3}, 1)}, {AttrFloat("ratio", -0.1F)}, 1, 10},
                  "ratio must be in [0, 1]");
}

}  // namespace
}  // namespace autodist::ops::testing
