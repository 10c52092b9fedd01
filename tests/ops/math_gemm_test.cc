#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(GemmTest, ComputesAlphaABPlusBetaC) {
  // A [2,3], B [3,2], C [2] broadcast over rows.
  OpCase op{"Gemm",
            {Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
             Tensor::FromVector<float>({3, 2}, {1, 0, 0, 1, 1, 1}),
             Tensor::FromVector<float>({2}, {10, 20})},
            {AttrFloat("alpha", 2.0F), AttrFloat("beta", 0.5F)}};
  // A B = [[4, 5], [10, 11]]; 2 A B + 0.5 C = [[13, 20], [25, 32]].
  ExpectTensorNear(RunOp(op)[0], {13, 20, 25, 32}, {2, 2});
}

TEST(GemmTest, TransposedOperands) {
  // transA: A is [3,2] holding A^T; transB: B is [2,3] holding B^T.
  OpCase op{"Gemm",
            {Tensor::FromVector<float>({3, 2}, {1, 4, 2, 5, 3, 6}),
             Tensor::FromVector<float>({2, 3}, {1, 0, 1, 0, 1, 1})},
            {AttrInt("transA", 1), AttrInt("transB", 1)}};
  ExpectTensorNear(RunOp(op)[0], {4, 5, 10, 11}, {2, 2});
}

class GemmGradientTest : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(GemmGradientTest, MatchesFiniteDifferences) {
  const auto [trans_a, trans_b, with_c] = GetParam();
  const Shape a_shape = trans_a ? Shape{4, 3} : Shape{3, 4};
  const Shape b_shape = trans_b ? Shape{5, 4} : Shape{4, 5};
  OpCase op{"Gemm",
            {RandomTensor(a_shape, 1), RandomTensor(b_shape, 2),
             with_c ? RandomTensor({1, 5}, 3) : Tensor()},
            {AttrInt("transA", trans_a), AttrInt("transB", trans_b), AttrFloat("alpha", 1.5F),
             AttrFloat("beta", 0.7F)}};
  ExpectGradientsMatch(op);
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmGradientTest,
                         ::testing::Combine(::testing::Values(0, 1), ::testing::Values(0, 1),
                                            ::testing::Bool()));

TEST(GemmTest, MismatchedInnerDimensionsNameTheNode) {
  OpCase op{"Gemm", {RandomTensor({2, 3}, 1), RandomTensor({4, 2}, 2)}};
  try {
    RunOp(op);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("Gemm node 'test_Gemm'"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("inner dimensions"), std::string::npos);
  }
}

TEST(GemmTest, CThatDoesNotBroadcastToTheOutputNamesItsShape) {
  // [1, 3] (A [1, 2] x B [2, 3]) takes C of [3], [1, 3], [1, 1], [] but not [5, 3], [2] or 3-D.
  for (const Shape& c : {Shape{3}, Shape{1, 3}, Shape{1, 1}, Shape{}}) {
    EXPECT_NO_THROW(RunOp(
        OpCase{"Gemm", {RandomTensor({1, 2}, 1), RandomTensor({2, 3}, 2), RandomTensor(c, 3)}}));
  }
  ExpectNodeError(
      OpCase{"Gemm", {RandomTensor({1, 2}, 1), RandomTensor({2, 3}, 2), RandomTensor({5, 3}, 3)}},
      "C of shape [5, 3] does not broadcast to [1, 3]");
  ExpectNodeError(
      OpCase{"Gemm", {RandomTensor({1, 2}, 1), RandomTensor({2, 3}, 2), RandomTensor({2}, 3)}},
      "C of shape [2] does not broadcast to [1, 3]");
  ExpectNodeError(
      OpCase{"Gemm",
             {RandomTensor({1, 2}, 1), RandomTensor({2, 3}, 2), RandomTensor({1, 1, 3}, 3)}},
      "C must be at most 2-D");
}

}  // namespace
}  // namespace autodist::ops::testing
