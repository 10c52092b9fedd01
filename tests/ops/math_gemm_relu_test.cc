// Gemm with a fused Relu (NodeInfo::fused_activation, as the planner fuses Gemm -> Relu) against
// the Gemm kernel followed by the Relu kernel: the same bits forward and backward, for every form
// of C, the transposes, an empty inner dimension, and the product split over threads by rows and
// by columns (blas.cc applies the activation per slice).
#include <cstring>
#include <tuple>

#include "runtime/ops/parallel.h"
#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

struct GemmForm {
  Shape a;
  Shape b;
  Shape c;  // empty with has_c false: no C
  bool has_c;
  int64_t trans_a;
  int64_t trans_b;
  float alpha;
  float beta;
};

std::vector<onnx::AttributeProto> Attributes(const GemmForm& form) {
  return {AttrInt("transA", form.trans_a), AttrInt("transB", form.trans_b),
          AttrFloat("alpha", form.alpha), AttrFloat("beta", form.beta)};
}

void ExpectSameBits(const Tensor& expected, const Tensor& actual, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what;
  ASSERT_EQ(expected.shape(), actual.shape()) << what;
  EXPECT_EQ(std::memcmp(expected.data<float>(), actual.data<float>(),
                        static_cast<size_t>(expected.numel()) * sizeof(float)),
            0)
      << what << " differs";
}

class GemmReluTest : public ::testing::TestWithParam<std::tuple<GemmForm, int>> {};

TEST_P(GemmReluTest, FusedGivesGemmThenRelusBits) {
  const auto& [form, threads] = GetParam();
  const int saved = NumThreads();
  SetNumThreads(threads);
  std::vector<Tensor> inputs{RandomTensor(form.a, 1), RandomTensor(form.b, 2)};
  if (form.has_c) inputs.push_back(RandomTensor(form.c, 3));
  OpCase gemm{"Gemm", inputs, Attributes(form)};
  OpCase fused = gemm;
  fused.activation = FusedActivation::kRelu;
  OpRunner gemm_runner(gemm);
  OpRunner fused_runner(fused);

  const Tensor product = gemm_runner.Forward(inputs)[0];
  OpRunner relu_runner(OpCase{"Relu", {product}});
  const Tensor dy = RandomTensor(product.shape(), 4);
  const OpResult relu = relu_runner.ForwardBackward({product}, {dy});
  const OpResult unfused = gemm_runner.ForwardBackward(inputs, {relu.input_grads[0]});
  const OpResult result = fused_runner.ForwardBackward(inputs, {dy});
  SetNumThreads(saved);

  ExpectSameBits(relu.outputs[0], result.outputs[0], "Y");
  ASSERT_EQ(result.input_grads.size(), unfused.input_grads.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ExpectSameBits(unfused.input_grads[i], result.input_grads[i],
                   "the gradient of input " + std::to_string(i));
  }
}

// The MLP's layers (transB, a bias row) at sizes that split the product over threads by rows
// (m >= n) and by columns (m < n), and the small forms of C, the transposes and k = 0.
INSTANTIATE_TEST_SUITE_P(
    Forms, GemmReluTest,
    ::testing::Combine(
        ::testing::Values(GemmForm{{64, 784}, {256, 784}, {256}, true, 0, 1, 1.0F, 1.0F},
                          GemmForm{{300, 128}, {10, 128}, {1, 10}, true, 0, 1, 1.0F, 1.0F},
                          GemmForm{{5, 7}, {7, 3}, {5, 3}, true, 0, 0, 0.5F, 2.0F},
                          GemmForm{{7, 5}, {7, 3}, {5, 1}, true, 1, 0, 1.0F, 1.0F},
                          GemmForm{{7, 5}, {3, 7}, {}, true, 1, 1, 1.5F, -1.0F},
                          GemmForm{{5, 7}, {7, 3}, {}, false, 0, 0, 1.0F, 1.0F},
                          GemmForm{{4, 0}, {0, 6}, {6}, true, 0, 0, 1.0F, 1.0F}),
        ::testing::Values(1, 3)));

TEST(GemmReluTest, OnlyGemmsKernelTakesAFusedActivation) {
  OpRunner gemm(OpCase{"Gemm", {RandomTensor({2, 3}, 1), RandomTensor({3, 2}, 2)}});
  EXPECT_TRUE(gemm.kernel().TakesFusedActivation(FusedActivation::kRelu));
  EXPECT_FALSE(gemm.kernel().TakesFusedActivation(FusedActivation::kNone));
  OpRunner matmul(OpCase{"MatMul", {RandomTensor({2, 3}, 1), RandomTensor({3, 2}, 2)}});
  EXPECT_FALSE(matmul.kernel().TakesFusedActivation(FusedActivation::kRelu));
}

// Backward of the fused step reads its output (Relu's gradient); plain Gemm's does not.
TEST(GemmReluTest, BackwardReadsTheOutputOnlyWhenFused) {
  OpCase gemm{"Gemm", {RandomTensor({2, 3}, 1), RandomTensor({3, 2}, 2)}};
  EXPECT_FALSE(OpRunner(gemm).kernel().BackwardNeedsOutput(0));
  gemm.activation = FusedActivation::kRelu;
  EXPECT_TRUE(OpRunner(gemm).kernel().BackwardNeedsOutput(0));
}

TEST(GemmReluTest, BadShapesAreStillTheGemmNodesError) {
  OpCase op{"Gemm", {RandomTensor({2, 3}, 1), RandomTensor({4, 2}, 2)}};
  op.activation = FusedActivation::kRelu;
  ExpectNodeError(op, "inner dimensions differ");
}

}  // namespace
}  // namespace autodist::ops::testing
