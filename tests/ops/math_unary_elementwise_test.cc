#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(UnaryElementwiseTest, ForwardValues) {
  const Tensor x = Tensor::FromVector<float>({2, 2}, {0.5F, 1, 2, 4});
  ExpectTensorNear(RunOp({"Neg", {x}})[0], {-0.5F, -1, -2, -4}, {2, 2});
  ExpectTensorNear(RunOp({"Exp", {x}})[0], {1.6487213F, 2.7182818F, 7.3890561F, 54.598150F}, {2, 2},
                   1e-5F);
  ExpectTensorNear(RunOp({"Log", {x}})[0], {-0.6931472F, 0, 0.6931472F, 1.3862944F}, {2, 2});
  ExpectTensorNear(RunOp({"Sqrt", {x}})[0], {0.7071068F, 1, 1.4142136F, 2}, {2, 2});
  // erf values from tables (also torch.erf): erf(0.5) = 0.5204999, erf(1) = 0.8427008,
  // erf(2) = 0.9953223, erf(4) = 0.99999998.
  ExpectTensorNear(RunOp({"Erf", {x}})[0], {0.5204999F, 0.8427008F, 0.9953223F, 1.0F}, {2, 2});
  ExpectTensorNear(RunOp({"Erf", {Tensor::Scalar(-1)}})[0], {-0.8427008F}, {});
}

TEST(UnaryElementwiseTest, EdgeValuesFollowIeee) {
  const Tensor x = Tensor::FromVector<float>({3}, {0, -1, 0});
  const Tensor log = RunOp({"Log", {x}})[0];
  EXPECT_TRUE(std::isinf(log.GetAsDouble(0)) && log.GetAsDouble(0) < 0);
  EXPECT_TRUE(std::isnan(log.GetAsDouble(1)));
  EXPECT_TRUE(std::isnan(RunOp({"Sqrt", {x}})[0].GetAsDouble(1)));
}

TEST(UnaryElementwiseTest, NegCarriesInt64) {
  const Tensor y = RunOp({"Neg", {Tensor::FromVector<int64_t>({3}, {3, -4, 0})}})[0];
  ASSERT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(y.ToInt64Vector("y"), (std::vector<int64_t>{-3, 4, 0}));
}

TEST(UnaryElementwiseTest, GradientsMatchFiniteDifferences) {
  for (const char* op : {"Neg", "Exp", "Log", "Sqrt", "Erf"}) {
    SCOPED_TRACE(op);
    // Positive inputs keep Log and Sqrt in their domain; a rank-3 shape and a scalar.
    ExpectGradientsMatch({op, {RandomTensor({2, 3, 4}, 7, 0.2F, 2.0F)}});
    ExpectGradientsMatch({op, {Tensor::Scalar(0.7F)}});
  }
  ExpectGradientsMatch({"Erf", {RandomTensor({10}, 8, -2.0F, 2.0F)}});
}

TEST(UnaryElementwiseTest, GradientsReadOnlyWhatTheyDeclare) {
  // Backward gets only the forward values the kernel asks for, as the executor would provide.
  for (const char* op : {"Neg", "Exp", "Log", "Sqrt", "Erf"}) {
    SCOPED_TRACE(op);
    const Tensor x = RandomTensor({4}, 3, 0.5F, 2.0F);
    OpRunner runner({op, {x}});
    std::unique_ptr<KernelState> state;
    const std::vector<Tensor> y = runner.Forward({x}, &state);
    const OpKernel& kernel = runner.kernel();
    const Tensor dy = RandomTensor({4}, 4);
    const NodeInfo* no_node = nullptr;
    BackwardContext ctx({kernel.BackwardNeedsInput(0) ? &x : nullptr},
                        {kernel.BackwardNeedsOutput(0) ? &y[0] : nullptr}, {&dy}, {true},
                        state.get(), no_node);
    kernel.Backward(ctx);
    EXPECT_EQ(ctx.take_input_grads()[0].shape(), (Shape{4}));
  }
}

TEST(UnaryElementwiseTest, WrongElementTypesAreClearErrors) {
  for (const char* op : {"Exp", "Log", "Sqrt", "Erf"}) {
    try {
      RunOp({op, {Tensor::FromVector<int64_t>({1}, {1})}});
      FAIL() << op << ": expected an error";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(std::string(op) + " node 'test_" + op + "'"), std::string::npos)
          << message;
      EXPECT_NE(message.find("int64"), std::string::npos) << message;
    }
  }
  EXPECT_THROW(RunOp({"Neg", {Tensor::FromVector<int32_t>({1}, {1})}}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
