#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

// numpy.matmul by definition: a [.., M, K] (or [K]) times b [.., K, N] (or [K]), batch axes
// broadcast, computed with plain loops as an independent reference.
Tensor ReferenceMatMul(const Tensor& a, const Tensor& b) {
  const Shape as = a.rank() == 1 ? Shape{1, a.dim(0)} : a.shape();
  const Shape bs = b.rank() == 1 ? Shape{b.dim(0), 1} : b.shape();
  const int64_t m = as[as.size() - 2];
  const int64_t k = as.back();
  const int64_t n = bs.back();
  const Shape a_batch(as.begin(), as.end() - 2);
  const Shape b_batch(bs.begin(), bs.end() - 2);
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  const auto dim = [rank](const Shape& s, size_t i) {
    return i < rank - s.size() ? int64_t{1} : s[i - (rank - s.size())];
  };
  Shape batch(rank);
  for (size_t i = 0; i < rank; ++i) batch[i] = std::max(dim(a_batch, i), dim(b_batch, i));
  Shape out_shape = batch;
  if (a.rank() > 1) out_shape.push_back(m);
  if (b.rank() > 1) out_shape.push_back(n);
  Tensor out(DType::kFloat32, out_shape);
  const int64_t entries = tensor::NumElements(batch);
  for (int64_t e = 0; e < entries; ++e) {
    int64_t rest = e;
    int64_t ai = 0;
    int64_t bi = 0;
    int64_t sa = 1;
    int64_t sb = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t index = rest % batch[i];
      rest /= batch[i];
      ai += (dim(a_batch, i) == 1 ? 0 : index) * sa;
      bi += (dim(b_batch, i) == 1 ? 0 : index) * sb;
      sa *= dim(a_batch, i);
      sb *= dim(b_batch, i);
    }
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double total = 0;
        for (int64_t j = 0; j < k; ++j) {
          total += a.GetAsDouble(ai * m * k + r * k + j) * b.GetAsDouble(bi * k * n + j * n + c);
        }
        out.data<float>()[e * m * n + r * n + c] = static_cast<float>(total);
      }
    }
  }
  return out;
}

TEST(MatMulTest, TwoByTwoByHand) {
  const Tensor a = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::FromVector<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  // [1 2 3; 4 5 6] [7 8; 9 10; 11 12] = [58 64; 139 154].
  ExpectTensorNear(RunOp({"MatMul", {a, b}})[0], {58, 64, 139, 154}, {2, 2});
}

TEST(MatMulTest, VectorPromotionByHand) {
  const Tensor m = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor v3 = Tensor::FromVector<float>({3}, {1, 0, -1});
  const Tensor v2 = Tensor::FromVector<float>({2}, {1, 2});
  ExpectTensorNear(RunOp({"MatMul", {m, v3}})[0], {-2, -2}, {2});     // [2,3] [3] -> [2]
  ExpectTensorNear(RunOp({"MatMul", {v2, m}})[0], {9, 12, 15}, {3});  // [2] [2,3] -> [3]
  ExpectTensorNear(RunOp({"MatMul", {v3, v3}})[0], {2}, {});          // dot product -> []
  // A batched matrix times a vector: [2,1,3] [3] -> [2,1].
  const Tensor batched = Tensor::FromVector<float>({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  ExpectTensorNear(RunOp({"MatMul", {batched, v3}})[0], {-2, -2}, {2, 1});
}

struct MatMulCase {
  Shape a;
  Shape b;
};

const std::vector<MatMulCase>& Cases() {
  static const std::vector<MatMulCase> cases = {
      {{3, 4}, {4, 5}},           // plain
      {{2, 3, 4}, {4, 5}},        // batched a, one b: folded into one GEMM
      {{2, 2, 3, 4}, {4, 5}},     // two batch axes folded
      {{3, 4}, {2, 4, 5}},        // one a, batched b
      {{2, 3, 4}, {2, 4, 5}},     // equal batches
      {{2, 1, 3, 4}, {3, 4, 5}},  // batch broadcast both ways -> [2, 3]
      {{1, 3, 4}, {2, 4, 5}},     // a broadcast over b's batch
      {{2, 3, 4}, {1, 4, 5}},     // b of batch size 1
      {{4}, {4, 5}},              // 1-D a
      {{3, 4}, {4}},              // 1-D b
      {{4}, {4}},                 // dot
      {{4}, {2, 4, 5}},           // 1-D a against a batch
      {{2, 3, 4}, {4}},           // batch against a 1-D b
      {{3, 0}, {0, 2}},           // empty inner dimension: zeros
      {{0, 3}, {3, 2}},           // empty rows
  };
  return cases;
}

class MatMulShapesTest : public ::testing::TestWithParam<size_t> {};

TEST_P(MatMulShapesTest, ForwardMatchesReference) {
  const MatMulCase& c = Cases()[GetParam()];
  const Tensor a = RandomTensor(c.a, 1);
  const Tensor b = RandomTensor(c.b, 2);
  const Tensor expected = ReferenceMatMul(a, b);
  std::vector<float> values(expected.data<float>(), expected.data<float>() + expected.numel());
  ExpectTensorNear(RunOp({"MatMul", {a, b}})[0], values, expected.shape(), 1e-5F);
}

TEST_P(MatMulShapesTest, GradientsMatchFiniteDifferences) {
  const MatMulCase& c = Cases()[GetParam()];
  if (tensor::NumElements(c.a) == 0 || tensor::NumElements(c.b) == 0) {
    // Nothing to perturb; the gradients must still have the operands' shapes.
    OpRunner runner({"MatMul", {RandomTensor(c.a, 1), RandomTensor(c.b, 2)}});
    const Tensor y = runner.Forward({RandomTensor(c.a, 1), RandomTensor(c.b, 2)})[0];
    const OpResult result = runner.ForwardBackward({RandomTensor(c.a, 1), RandomTensor(c.b, 2)},
                                                   {RandomTensor(y.shape(), 3)});
    EXPECT_EQ(result.input_grads[0].shape(), c.a);
    EXPECT_EQ(result.input_grads[1].shape(), c.b);
    return;
  }
  ExpectGradientsMatch({"MatMul", {RandomTensor(c.a, 1), RandomTensor(c.b, 2)}});
}

INSTANTIATE_TEST_SUITE_P(AllShapes, MatMulShapesTest, ::testing::Range<size_t>(0, 15));

TEST(MatMulTest, ManySmallBatchesRunInParallelCorrectly) {
  // 64 entries of 32x32x32 GEMMs (small enough to be spread over threads), with a broadcast so
  // backward accumulates shared matrices.
  const Tensor a = RandomTensor({16, 4, 32, 32}, 5);
  const Tensor b = RandomTensor({4, 32, 32}, 6);
  const Tensor expected = ReferenceMatMul(a, b);
  std::vector<float> values(expected.data<float>(), expected.data<float>() + expected.numel());
  ExpectTensorNear(RunOp({"MatMul", {a, b}})[0], values, expected.shape(), 1e-5F);
  // dB = sum over the 16 a-batches of A^T dY: check against the reference on dY = ones.
  OpRunner runner({"MatMul", {a, b}});
  const OpResult result = runner.ForwardBackward({a, b}, {Tensor::Full({16, 4, 32, 32}, 1.0F)});
  const Tensor& db = result.input_grads[1];
  for (int64_t h = 0; h < 4; ++h) {
    for (int64_t j = 0; j < 32; ++j) {
      double column_total = 0;  // sum over batches and rows of A[.., h, r, j]
      for (int64_t e = 0; e < 16; ++e) {
        for (int64_t r = 0; r < 32; ++r) {
          column_total += a.GetAsDouble(((e * 4 + h) * 32 + r) * 32 + j);
        }
      }
      for (int64_t c = 0; c < 32; ++c) {
        EXPECT_NEAR(db.GetAsDouble((h * 32 + j) * 32 + c), column_total, 1e-4);
      }
    }
  }
  // dA = dY B^T: with dY = ones, dA[e, h, r, j] = sum_c B[h, j, c] for every e and r.
  const Tensor& da = result.input_grads[0];
  for (int64_t e = 0; e < 16; ++e) {
    for (int64_t h = 0; h < 4; ++h) {
      for (int64_t j = 0; j < 32; ++j) {
        double row_total = 0;
        for (int64_t c = 0; c < 32; ++c) row_total += b.GetAsDouble((h * 32 + j) * 32 + c);
        for (int64_t r = 0; r < 32; ++r) {
          ASSERT_NEAR(da.GetAsDouble(((e * 4 + h) * 32 + r) * 32 + j), row_total, 1e-4);
        }
      }
    }
  }
}

TEST(MatMulTest, BadShapesAreClearErrors) {
  ExpectNodeError({"MatMul", {RandomTensor({2, 3}, 1), RandomTensor({4, 2}, 2)}},
                  "inner dimensions");
  ExpectNodeError({"MatMul", {RandomTensor({3}, 1), RandomTensor({4}, 2)}}, "inner dimensions");
  ExpectNodeError({"MatMul", {RandomTensor({2, 2, 3}, 1), RandomTensor({3, 3, 2}, 2)}},
                  "batch axes");
  ExpectNodeError({"MatMul", {Tensor::Scalar(1), RandomTensor({1, 2}, 2)}}, "rank >= 1");
  ExpectNodeError({"MatMul", {Tensor::FromVector<int64_t>({1, 1}, {1}), RandomTensor({1, 1}, 2)}},
                  "float32");
}

}  // namespace
}  // namespace autodist::ops::testing
