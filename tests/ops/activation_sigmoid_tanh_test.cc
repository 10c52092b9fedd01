#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(SigmoidTanhTest, ForwardValues) {
  const Tensor x = Tensor::FromVector<float>({4}, {0, 1, -2, 0.5F});
  // 1 / (1 + e^-x): 0.5, 0.7310586, 0.1192029, 0.6224593.
  ExpectTensorNear(RunOp({"Sigmoid", {x}})[0], {0.5F, 0.7310586F, 0.1192029F, 0.6224593F}, {4});
  // tanh: 0, 0.7615942, -0.9640276, 0.4621172.
  ExpectTensorNear(RunOp({"Tanh", {x}})[0], {0, 0.7615942F, -0.9640276F, 0.4621172F}, {4});
}

TEST(SigmoidTanhTest, SaturatesWithoutNaN) {
  const Tensor x = Tensor::FromVector<float>({2}, {-200, 200});
  ExpectTensorNear(RunOp({"Sigmoid", {x}})[0], {0, 1}, {2});
  ExpectTensorNear(RunOp({"Tanh", {x}})[0], {-1, 1}, {2});
}

TEST(SigmoidTanhTest, GradientsMatchFiniteDifferences) {
  for (const char* op : {"Sigmoid", "Tanh"}) {
    SCOPED_TRACE(op);
    ExpectGradientsMatch({op, {RandomTensor({4, 5}, 3, -3.0F, 3.0F)}});
    ExpectGradientsMatch({op, {Tensor::Scalar(0.3F)}});
  }
}

TEST(SigmoidTanhTest, BackwardUsesOnlyTheOutput) {
  // dsigmoid = y (1 - y), dtanh = 1 - y^2, from the output alone (no input given).
  for (const char* op : {"Sigmoid", "Tanh"}) {
    const Tensor x = Tensor::FromVector<float>({2}, {0, 1});
    OpRunner runner({op, {x}});
    const std::vector<Tensor> y = runner.Forward({x});
    EXPECT_FALSE(runner.kernel().BackwardNeedsInput(0));
    const Tensor dy = Tensor::Full({2}, 1.0F);
    const NodeInfo* no_node = nullptr;
    BackwardContext ctx({nullptr}, {&y[0]}, {&dy}, {true}, nullptr, no_node);
    runner.kernel().Backward(ctx);
    const Tensor dx = ctx.take_input_grads()[0];
    if (std::string(op) == "Sigmoid") {
      ExpectTensorNear(dx, {0.25F, 0.7310586F * (1 - 0.7310586F)}, {2});
    } else {
      ExpectTensorNear(dx, {1, 1 - 0.7615942F * 0.7615942F}, {2});
    }
  }
}

TEST(SigmoidTanhTest, NonFloatInputIsAClearError) {
  for (const char* op : {"Sigmoid", "Tanh"}) {
    try {
      RunOp({op, {Tensor::FromVector<int64_t>({1}, {1})}});
      FAIL() << "expected an error";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("node 'test_" + std::string(op) + "'"),
                std::string::npos);
    }
  }
}

}  // namespace
}  // namespace autodist::ops::testing
