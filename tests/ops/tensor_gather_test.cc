#include <gmock/gmock.h>

#include <random>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor Indices(const Shape& shape, const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>(shape, values);
}

// np.arange(n) reshaped, as float32.
Tensor Arange(const Shape& shape) {
  std::vector<float> values(static_cast<size_t>(tensor::NumElements(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return Tensor::FromVector<float>(shape, values);
}

TEST(GatherTest, EmbeddingLookupWithTokenMatrix) {
  // A [5, 3] table read by [N=2, L=3] tokens, one of them negative (-1 is row 4).
  const Tensor table = Arange({5, 3});
  const Tensor y = RunOp(OpCase{"Gather", {table, Indices({2, 3}, {0, 2, -1, 2, 2, 4})}})[0];
  ExpectTensorNear(y, {0, 1, 2, 6, 7, 8, 12, 13, 14, 6, 7, 8, 6, 7, 8, 12, 13, 14}, {2, 3, 3});
}

TEST(GatherTest, Axis0GradientIsSparseWithDuplicatesSummed) {
  const Tensor table = RandomTensor({5, 3}, 1);
  const Tensor tokens = Indices({2, 3}, {0, 2, -1, 2, 2, 4});
  std::vector<float> dy_values(18);
  for (size_t i = 0; i < dy_values.size(); ++i) dy_values[i] = static_cast<float>(i + 1);
  const Tensor dy = Tensor::FromVector<float>({2, 3, 3}, dy_values);
  OpRunner runner(OpCase{"Gather", {table, tokens}});
  const OpResult result = runner.ForwardBackward({table, tokens}, {dy});
  ASSERT_TRUE(result.sparse[0] != nullptr) << "axis 0 must give a sparse gradient";
  const SparseGradient& grad = *result.sparse[0];
  EXPECT_EQ(grad.dense_shape, (Shape{5, 3}));
  ExpectTensorNear(grad.indices, {0, 2, 4}, {3});
  // dy rows (1-based values): token (0,0)=row 0 -> [1,2,3]; row 2 from (0,1), (1,0), (1,1) ->
  // [4,5,6]+[10,11,12]+[13,14,15]; row 4 from (0,2) and (1,2) -> [7,8,9]+[16,17,18].
  ExpectTensorNear(grad.values, {1, 2, 3, 27, 30, 33, 23, 25, 27}, {3, 3});
  ExpectTensorNear(result.input_grads[0], {1, 2, 3, 0, 0, 0, 27, 30, 33, 0, 0, 0, 23, 25, 27},
                   {5, 3});
  EXPECT_FALSE(runner.kernel().IsDifferentiable(1));
}

TEST(GatherTest, DensifiedSparseGradientMatchesFiniteDifferences) {
  // ExpectGradientsMatch densifies the sparse gradient before comparing.
  ExpectGradientsMatch(
      OpCase{"Gather", {RandomTensor({6, 4}, 2), Indices({2, 4}, {5, 0, 5, -6, 3, 3, -1, 2})}});
  ExpectGradientsMatch(OpCase{"Gather", {RandomTensor({4}, 3), Indices({3}, {1, 1, -4})}});
  ExpectGradientsMatch(OpCase{"Gather", {RandomTensor({3, 2, 2}, 4), Indices({}, {-2})}});
}

TEST(GatherTest, OtherAxesMatchNumpyTake) {
  const Tensor x = Arange({2, 3, 4});
  // np.take(np.arange(24).reshape(2, 3, 4), [[1, -1], [0, 1]], axis=1).
  ExpectTensorNear(
      RunOp(OpCase{"Gather", {x, Indices({2, 2}, {1, -1, 0, 1})}, {AttrInt("axis", 1)}})[0],
      {4,  5,  6,  7,  8,  9,  10, 11, 0,  1,  2,  3,  4,  5,  6,  7,
       16, 17, 18, 19, 20, 21, 22, 23, 12, 13, 14, 15, 16, 17, 18, 19},
      {2, 2, 2, 4});
  // np.take(..., [3, 0, -1], axis=2).
  ExpectTensorNear(RunOp(OpCase{"Gather", {x, Indices({3}, {3, 0, -1})}, {AttrInt("axis", -1)}})[0],
                   {3, 0, 3, 7, 4, 7, 11, 8, 11, 15, 12, 15, 19, 16, 19, 23, 20, 23}, {2, 3, 3});
}

TEST(GatherTest, OtherAxesHaveDenseGradients) {
  for (const int64_t axis : {1, 2, -1}) {
    const OpCase op{"Gather",
                    {RandomTensor({2, 3, 3}, 5), Indices({2, 2}, {1, -1, 1, 0})},
                    {AttrInt("axis", axis)}};
    ExpectGradientsMatch(op);
    OpRunner runner(op);
    const OpResult result =
        runner.ForwardBackward(op.inputs, {RandomTensor(runner.Forward(op.inputs)[0].shape(), 6)});
    EXPECT_TRUE(result.sparse[0] == nullptr);
  }
}

TEST(GatherTest, Int64DataAndScalarIndex) {
  // Shape(x)[2] as exported graphs compute it: int64 data, a rank-0 (int32) index.
  const Tensor shape = Tensor::FromVector<int64_t>({4}, {2, 3, 5, 7});
  const Tensor y = RunOp(OpCase{"Gather", {shape, Tensor::FromVector<int32_t>({}, {2})}})[0];
  EXPECT_EQ(y.dtype(), DType::kInt64);
  ExpectTensorNear(y, {5}, {});
  const Tensor pair = RunOp(OpCase{"Gather", {shape, Indices({2}, {-1, 0})}})[0];
  ExpectTensorNear(pair, {7, 2}, {2});
}

TEST(GatherTest, LargeLookupsMatchAnElementwiseReference) {
  std::mt19937_64 engine(7);
  struct Case {
    Shape shape;
    int64_t axis;
    int64_t count;
  };
  // An embedding table read by 4096 tokens; axis 1 with several blocks, and with one block (the
  // dense gradient then splits columns between threads).
  for (const Case& c :
       {Case{{1000, 64}, 0, 4096}, Case{{3, 500, 40}, 1, 700}, Case{{1, 500, 40}, 1, 700}}) {
    const Shape& shape = c.shape;
    const int64_t axis = c.axis;
    const int64_t count = c.count;
    const int64_t dim = shape[static_cast<size_t>(axis)];
    std::uniform_int_distribution<int64_t> pick(-dim, dim - 1);
    std::vector<int64_t> idx(static_cast<size_t>(count));
    for (int64_t& i : idx) i = pick(engine);
    const Tensor data = RandomTensor(shape, 8);
    const Tensor indices = Indices({count}, idx);
    OpRunner runner(OpCase{"Gather", {data, indices}, {AttrInt("axis", axis)}});
    const Tensor y = runner.Forward({data, indices})[0];
    const Tensor dy = RandomTensor(y.shape(), 9);
    const OpResult result = runner.ForwardBackward({data, indices}, {dy});

    const int64_t outer = axis == 0 ? 1 : shape[0];
    const int64_t inner = shape.back();
    std::vector<double> expected_dx(static_cast<size_t>(data.numel()), 0.0);
    int64_t mismatches = 0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < count; ++j) {
        const int64_t row = idx[static_cast<size_t>(j)] < 0 ? idx[static_cast<size_t>(j)] + dim
                                                            : idx[static_cast<size_t>(j)];
        for (int64_t k = 0; k < inner; ++k) {
          const int64_t in = (o * dim + row) * inner + k;
          const int64_t out = (o * count + j) * inner + k;
          mismatches += y.data<float>()[out] != data.data<float>()[in] ? 1 : 0;
          expected_dx[static_cast<size_t>(in)] += dy.data<float>()[out];
        }
      }
    }
    EXPECT_EQ(mismatches, 0) << "axis " << axis;
    const auto* dx = result.input_grads[0].data<float>();
    for (size_t i = 0; i < expected_dx.size(); ++i) {
      ASSERT_NEAR(dx[i], expected_dx[i], 1e-4) << "axis " << axis << " element " << i;
    }
  }
}

TEST(GatherTest, EmptyIndices) {
  const Tensor table = RandomTensor({4, 2}, 10);
  const Tensor none(DType::kInt64, {0});
  OpRunner runner(OpCase{"Gather", {table, none}});
  const OpResult result = runner.ForwardBackward({table, none}, {Tensor(DType::kFloat32, {0, 2})});
  EXPECT_EQ(result.outputs[0].shape(), (Shape{0, 2}));
  ASSERT_TRUE(result.sparse[0] != nullptr);
  EXPECT_EQ(result.sparse[0]->indices.numel(), 0);
  ExpectTensorNear(result.input_grads[0], {0, 0, 0, 0, 0, 0, 0, 0}, {4, 2});
}

TEST(GatherTest, BadInputsNameTheNode) {
  const Tensor table = RandomTensor({5, 3}, 11);
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Gather", {table, Indices({2}, {1, 5})}});
      },
      ThrowsMessage<Error>(HasSubstr("Gather node 'test_Gather'")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Gather", {table, Indices({2}, {1, 5})}});
      },
      ThrowsMessage<Error>(HasSubstr("index 5 is out of range for axis 0 of length 5")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Gather", {table, Indices({1}, {-6})}});
      },
      ThrowsMessage<Error>(HasSubstr("index -6 is out of range")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Gather", {table, Indices({1}, {0})}, {AttrInt("axis", 2)}});
      },
      ThrowsMessage<Error>(HasSubstr("axis 2 is out of range")));
  EXPECT_THROW(RunOp(OpCase{"Gather", {table, Tensor::FromVector<float>({1}, {0})}}), Error);
  EXPECT_THROW(RunOp(OpCase{"Gather", {Tensor::Scalar(1), Indices({}, {0})}}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
