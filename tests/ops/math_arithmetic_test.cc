#include <functional>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(ArithmeticTest, HandComputedBroadcasts) {
  const Tensor m = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row = Tensor::FromVector<float>({3}, {10, 20, 30});
  const Tensor column = Tensor::FromVector<float>({2, 1}, {2, 4});
  ExpectTensorNear(RunOp({"Add", {m, row}})[0], {11, 22, 33, 14, 25, 36}, {2, 3});
  ExpectTensorNear(RunOp({"Sub", {row, m}})[0], {9, 18, 27, 6, 15, 24}, {2, 3});
  ExpectTensorNear(RunOp({"Mul", {m, column}})[0], {2, 4, 6, 16, 20, 24}, {2, 3});
  ExpectTensorNear(RunOp({"Div", {m, column}})[0], {0.5F, 1, 1.5F, 1, 1.25F, 1.5F}, {2, 3});
  // Outer broadcast [2,1] x [3] -> [2,3], both operands stretched.
  ExpectTensorNear(RunOp({"Mul", {column, row}})[0], {20, 40, 60, 40, 80, 120}, {2, 3});
  // Scalars on either side, and a rank-0 result.
  ExpectTensorNear(RunOp({"Sub", {Tensor::Scalar(1), m}})[0], {0, -1, -2, -3, -4, -5}, {2, 3});
  ExpectTensorNear(RunOp({"Div", {m, Tensor::Scalar(4)}})[0], {0.25F, 0.5F, 0.75F, 1, 1.25F, 1.5F},
                   {2, 3});
  ExpectTensorNear(RunOp({"Add", {Tensor::Scalar(1.5F), Tensor::Scalar(2)}})[0], {3.5F}, {});
  // [1] against [2,3] keeps rank 2; [1,1,1] against [3] lifts the result to rank 3.
  ExpectTensorNear(RunOp({"Add", {Tensor::FromVector<float>({1}, {1}), m}})[0], {2, 3, 4, 5, 6, 7},
                   {2, 3});
  ExpectTensorNear(RunOp({"Mul", {Tensor::FromVector<float>({1, 1, 1}, {2}), row}})[0],
                   {20, 40, 60}, {1, 1, 3});
}

TEST(ArithmeticTest, EmptyOperandsGiveEmptyResults) {
  const std::vector<Tensor> out =
      RunOp({"Add", {Tensor(DType::kFloat32, {0, 3}), Tensor::FromVector<float>({3}, {1, 2, 3})}});
  EXPECT_EQ(out[0].shape(), (Shape{0, 3}));
}

// Reference broadcasting by direct index arithmetic, independent of the kernels' loops.
Tensor NaiveBroadcast(const Tensor& a, const Tensor& b,
                      const std::function<float(float, float)>& f) {
  const size_t rank = std::max(a.rank(), b.rank());
  Shape out_shape(rank);
  const auto dim_of = [rank](const Tensor& t, size_t axis) {
    const size_t offset = rank - t.rank();
    return axis < offset ? int64_t{1} : t.dim(axis - offset);
  };
  for (size_t i = 0; i < rank; ++i) out_shape[i] = std::max(dim_of(a, i), dim_of(b, i));
  Tensor out(DType::kFloat32, out_shape);
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t rest = flat;
    int64_t ia = 0;
    int64_t ib = 0;
    int64_t sa = 1;
    int64_t sb = 1;
    for (size_t axis = rank; axis-- > 0;) {
      const int64_t index = rest % out_shape[axis];
      rest /= out_shape[axis];
      const int64_t da = dim_of(a, axis);
      const int64_t db = dim_of(b, axis);
      ia += (da == 1 ? 0 : index) * sa;
      ib += (db == 1 ? 0 : index) * sb;
      sa *= da;
      sb *= db;
    }
    out.data<float>()[flat] =
        f(static_cast<float>(a.GetAsDouble(ia)), static_cast<float>(b.GetAsDouble(ib)));
  }
  return out;
}

struct ShapePair {
  Shape a;
  Shape b;
};

const std::vector<ShapePair>& BroadcastCases() {
  static const std::vector<ShapePair> cases = {
      {{2, 3}, {2, 3}},        // equal shapes
      {{2, 3}, {}},            // scalar right
      {{}, {2, 3}},            // scalar left
      {{4, 3}, {3}},           // bias row
      {{4, 3}, {4, 1}},        // per-row scale
      {{2, 3, 4}, {3, 1}},     // middle axis
      {{2, 1, 4}, {3, 1}},     // both stretched
      {{3, 1, 2}, {1, 4, 1}},  // alternating
      {{1}, {2, 3}},           // one-element tensor, lower rank
      {{2, 1, 3, 1}, {1, 5, 1, 2}},
  };
  return cases;
}

class ArithmeticBroadcastTest : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {};

TEST_P(ArithmeticBroadcastTest, ForwardMatchesNaiveBroadcast) {
  const auto& [op_type, index] = GetParam();
  const ShapePair& shapes = BroadcastCases()[index];
  const Tensor a = RandomTensor(shapes.a, 11);
  const Tensor b = RandomTensor(shapes.b, 12, 0.5F, 2.0F);  // away from zero for Div
  std::function<float(float, float)> f;
  if (op_type == "Add") f = [](float x, float y) { return x + y; };
  if (op_type == "Sub") f = [](float x, float y) { return x - y; };
  if (op_type == "Mul") f = [](float x, float y) { return x * y; };
  if (op_type == "Div") f = [](float x, float y) { return x / y; };
  const Tensor expected = NaiveBroadcast(a, b, f);
  const Tensor actual = RunOp({op_type, {a, b}})[0];
  std::vector<float> values(expected.data<float>(), expected.data<float>() + expected.numel());
  ExpectTensorNear(actual, values, expected.shape(), 1e-6F);
}

TEST_P(ArithmeticBroadcastTest, GradientsMatchFiniteDifferences) {
  const auto& [op_type, index] = GetParam();
  const ShapePair& shapes = BroadcastCases()[index];
  ExpectGradientsMatch(
      {op_type, {RandomTensor(shapes.a, 21), RandomTensor(shapes.b, 22, 0.5F, 2)}});
}

INSTANTIATE_TEST_SUITE_P(AllOpsAndShapes, ArithmeticBroadcastTest,
                         ::testing::Combine(::testing::Values("Add", "Sub", "Mul", "Div"),
                                            ::testing::Range<size_t>(0, 10)));

TEST(ArithmeticTest, LargeBroadcastTakesTheParallelPathCorrectly) {
  // Big enough for several parallel chunks, with rows starting mid-odometer.
  const Tensor a = RandomTensor({64, 33, 40}, 5);
  const Tensor b = RandomTensor({33, 1}, 6);
  const Tensor expected = NaiveBroadcast(a, b, [](float x, float y) { return x * y; });
  const Tensor actual = RunOp({"Mul", {a, b}})[0];
  ASSERT_EQ(actual.shape(), expected.shape());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    ASSERT_EQ(actual.data<float>()[i], expected.data<float>()[i]) << "element " << i;
  }
}

TEST(ArithmeticTest, DivGradientsAreThoseOfPyTorch) {
  // torch: a = [1., -2., 3.], b = [2., 4., -0.5] (requires_grad), (a / b).backward(ones)
  // gives a.grad = [0.5, 0.25, -2.0], b.grad = [-0.25, 0.125, -12.0].
  OpRunner runner({"Div",
                   {Tensor::FromVector<float>({3}, {1, -2, 3}),
                    Tensor::FromVector<float>({3}, {2, 4, -0.5F})}});
  const OpResult result = runner.ForwardBackward(
      {Tensor::FromVector<float>({3}, {1, -2, 3}), Tensor::FromVector<float>({3}, {2, 4, -0.5F})},
      {Tensor::Full({3}, 1.0F)});
  ExpectTensorNear(result.input_grads[0], {0.5F, 0.25F, -2.0F}, {3});
  ExpectTensorNear(result.input_grads[1], {-0.25F, 0.125F, -12.0F}, {3});
}

TEST(ArithmeticTest, BroadcastGradientIsSummedToTheOperandShape) {
  // d(sum(A + b))/db for A [3,2], b [2] with dy = 1 is the column count 3 per element.
  OpRunner runner({"Add", {RandomTensor({3, 2}, 1), RandomTensor({2}, 2)}});
  const OpResult result = runner.ForwardBackward({RandomTensor({3, 2}, 1), RandomTensor({2}, 2)},
                                                 {Tensor::Full({3, 2}, 1.0F)});
  ExpectTensorNear(result.input_grads[1], {3, 3}, {2});
  ExpectTensorNear(result.input_grads[0], {1, 1, 1, 1, 1, 1}, {3, 2});
}

TEST(ArithmeticTest, Int64ShapeArithmetic) {
  const Tensor dims = Tensor::FromVector<int64_t>({3}, {8, -7, 6});
  const Tensor two = Tensor::FromVector<int64_t>({}, {2});
  const Tensor sum = RunOp({"Add", {dims, two}})[0];
  ASSERT_EQ(sum.dtype(), DType::kInt64);
  EXPECT_EQ(sum.ToInt64Vector("sum"), (std::vector<int64_t>{10, -5, 8}));
  EXPECT_EQ(RunOp({"Mul", {dims, two}})[0].ToInt64Vector("product"),
            (std::vector<int64_t>{16, -14, 12}));
  EXPECT_EQ(RunOp({"Sub", {two, dims}})[0].ToInt64Vector("difference"),
            (std::vector<int64_t>{-6, 9, -4}));
  // Truncation toward zero: -7 / 2 = -3.
  EXPECT_EQ(RunOp({"Div", {dims, two}})[0].ToInt64Vector("quotient"),
            (std::vector<int64_t>{4, -3, 3}));
}

TEST(ArithmeticTest, BadInputsAreClearErrors) {
  ExpectNodeError({"Add", {RandomTensor({2, 3}, 1), RandomTensor({2}, 2)}}, "cannot be broadcast");
  ExpectNodeError({"Mul", {RandomTensor({4, 3}, 1), RandomTensor({2, 4, 1, 2}, 2)}},
                  "cannot be broadcast");
  ExpectNodeError({"Sub", {RandomTensor({2}, 1), Tensor::FromVector<int64_t>({2}, {1, 2})}},
                  "same element type");
  ExpectNodeError(
      {"Add", {Tensor::FromVector<int32_t>({1}, {1}), Tensor::FromVector<int32_t>({1}, {2})}},
      "int32");
  ExpectNodeError(
      {"Div", {Tensor::FromVector<int64_t>({2}, {4, 5}), Tensor::FromVector<int64_t>({2}, {1, 0})}},
      "division by zero");
}

}  // namespace
}  // namespace autodist::ops::testing
