#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(LeakyReluTest, ForwardByHand) {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {-2, -0.5F, 0, 0.5F, 3, -10});
  ExpectTensorNear(RunOp({"LeakyRelu", {x}, {AttrFloat("alpha", 0.1F)}})[0],
                   {-0.2F, -0.05F, 0, 0.5F, 3, -1}, {2, 3});
  // Default alpha is 0.01.
  ExpectTensorNear(RunOp({"LeakyRelu", {x}})[0], {-0.02F, -0.005F, 0, 0.5F, 3, -0.1F}, {2, 3});
}

TEST(LeakyReluTest, GradientAtZeroTakesTheAlphaSideLikePyTorch) {
  // torch: x = [-1, 0, 2], leaky_relu(x, 0.2).backward(ones) gives x.grad = [0.2, 0.2, 1].
  for (const float alpha : {0.2F, -0.5F}) {  // output-based and input-based backward
    const Tensor x = Tensor::FromVector<float>({3}, {-1, 0, 2});
    OpRunner runner({"LeakyRelu", {x}, {AttrFloat("alpha", alpha)}});
    const OpResult result = runner.ForwardBackward({x}, {Tensor::Full({3}, 1.0F)});
    ExpectTensorNear(result.input_grads[0], {alpha, alpha, 1}, {3});
  }
}

TEST(LeakyReluTest, GradientsMatchFiniteDifferences) {
  for (const float alpha : {0.01F, 0.3F, 0.0F, -0.5F, 1.5F}) {
    SCOPED_TRACE(alpha);
    ExpectGradientsMatch({"LeakyRelu", {RandomTensor({3, 7}, 5)}, {AttrFloat("alpha", alpha)}});
  }
}

TEST(LeakyReluTest, BackwardReadsOnlyWhatItDeclares) {
  for (const float alpha : {0.1F, -0.1F}) {
    const Tensor x = RandomTensor({6}, 2);
    OpRunner runner({"LeakyRelu", {x}, {AttrFloat("alpha", alpha)}});
    const std::vector<Tensor> y = runner.Forward({x});
    const OpKernel& kernel = runner.kernel();
    EXPECT_NE(kernel.BackwardNeedsInput(0), kernel.BackwardNeedsOutput(0));
    const Tensor dy = RandomTensor({6}, 3);
    const NodeInfo* no_node = nullptr;
    BackwardContext ctx({kernel.BackwardNeedsInput(0) ? &x : nullptr},
                        {kernel.BackwardNeedsOutput(0) ? &y[0] : nullptr}, {&dy}, {true}, nullptr,
                        no_node);
    kernel.Backward(ctx);
    const Tensor dx = ctx.take_input_grads()[0];
    for (int64_t i = 0; i < 6; ++i) {
      const float expected =
          x.data<float>()[i] > 0 ? dy.data<float>()[i] : alpha * dy.data<float>()[i];
      EXPECT_FLOAT_EQ(dx.data<float>()[i], expected);
    }
  }
}

TEST(LeakyReluTest, NonFloatInputIsAClearError) {
  try {
    RunOp({"LeakyRelu", {Tensor::FromVector<int64_t>({1}, {1})}});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("LeakyRelu node 'test_LeakyRelu'"), std::string::npos);
  }
}

}  // namespace
}  // namespace autodist::ops::testing
