#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(IdentityTest, ReturnsTheInputItself) {
  const Tensor x = RandomTensor({2, 3}, 1);
  const Tensor y = RunOp(OpCase{"Identity", {x}})[0];
  EXPECT_TRUE(y.SharesStorageWith(x));
  EXPECT_EQ(y.shape(), x.shape());
  const Tensor ints = Tensor::FromVector<int64_t>({2}, {4, 5});
  const Tensor z = RunOp(OpCase{"Identity", {ints}})[0];
  EXPECT_EQ(z.dtype(), DType::kInt64);
  ExpectTensorNear(z, {4, 5}, {2});
}

TEST(IdentityTest, GradientPassesThroughUnchanged) {
  ExpectGradientsMatch(OpCase{"Identity", {RandomTensor({3, 4}, 2)}});
  const Tensor x = RandomTensor({2}, 3);
  const Tensor dy = Tensor::FromVector<float>({2}, {7, 8});
  OpRunner runner(OpCase{"Identity", {x}});
  EXPECT_TRUE(runner.kernel().PassesGradientThrough());
  const OpResult result = runner.ForwardBackward({x}, {dy});
  EXPECT_TRUE(result.input_grads[0].SharesStorageWith(dy));
  EXPECT_FALSE(runner.kernel().BackwardNeedsInput(0));
}

TEST(IdentityTest, MissingInputIsAnError) {
  EXPECT_THROW(RunOp(OpCase{"Identity", {Tensor()}}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
