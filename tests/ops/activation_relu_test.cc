#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(ReluTest, ClampsNegativesToZero) {
  OpCase op{"Relu", {Tensor::FromVector<float>({4}, {-2, -0.5F, 0.5F, 3})}};
  ExpectTensorNear(RunOp(op)[0], {0, 0, 0.5F, 3}, {4});
}

TEST(ReluTest, GradientMatchesFiniteDifferences) {
  // Values kept away from 0, where Relu is not differentiable.
  Tensor x = RandomTensor({3, 7}, 5, 0.1F, 1.0F);
  float* data = x.data<float>();
  for (int64_t i = 0; i < x.numel(); i += 2) data[i] = -data[i];
  ExpectGradientsMatch(OpCase{"Relu", {x}});
}

}  // namespace
}  // namespace autodist::ops::testing
