#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

Tensor Iota(const Shape& shape) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

Tensor Axes(const std::vector<int64_t>& axes) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(axes.size())}, axes);
}

// x = arange(24).reshape(2, 3, 4); values below from torch.sum / torch.mean on that tensor.
TEST(ReduceTest, ReduceSumByAxesInput) {
  const Tensor x = Iota({2, 3, 4});
  ExpectTensorNear(RunOp({"ReduceSum", {x, Axes({0, 2})}, {AttrInt("keepdims", 0)}})[0],
                   {60, 92, 124}, {3});
  ExpectTensorNear(RunOp({"ReduceSum", {x, Axes({-1})}})[0], {6, 22, 38, 54, 70, 86}, {2, 3, 1});
  // No axes: everything, keeping rank 3 by default.
  ExpectTensorNear(RunOp({"ReduceSum", {x}})[0], {276}, {1, 1, 1});
  ExpectTensorNear(RunOp({"ReduceSum", {x, Axes({})}, {AttrInt("keepdims", 0)}})[0], {276}, {});
}

TEST(ReduceTest, ReduceSumNoopWithEmptyAxesIsIdentity) {
  const Tensor x = Iota({2, 3});
  const std::vector<Tensor> out =
      RunOp({"ReduceSum", {x, Axes({})}, {AttrInt("noop_with_empty_axes", 1)}});
  ExpectTensorNear(out[0], {0, 1, 2, 3, 4, 5}, {2, 3});
  // Given axes still reduce.
  ExpectTensorNear(RunOp({"ReduceSum", {x, Axes({1})}, {AttrInt("noop_with_empty_axes", 1)}})[0],
                   {3, 12}, {2, 1});
  // The identity passes the gradient through unchanged.
  ExpectGradientsMatch(
      {"ReduceSum", {RandomTensor({2, 3}, 1), Axes({})}, {AttrInt("noop_with_empty_axes", 1)}});
}

TEST(ReduceTest, ReduceSumBeforeOpset13TakesAnAttribute) {
  const Tensor x = Iota({2, 3, 4});
  OpCase op{"ReduceSum", {x}, {AttrInts("axes", {1}), AttrInt("keepdims", 0)}};
  op.opset = 11;
  ExpectTensorNear(RunOp(op)[0], {12, 15, 18, 21, 48, 51, 54, 57}, {2, 4});
}

TEST(ReduceTest, ReduceMean) {
  const Tensor x = Iota({2, 3, 4});
  ExpectTensorNear(RunOp({"ReduceMean", {x}, {AttrInts("axes", {1})}})[0],
                   {4, 5, 6, 7, 16, 17, 18, 19}, {2, 1, 4});
  ExpectTensorNear(RunOp({"ReduceMean", {x}, {AttrInt("keepdims", 0)}})[0], {11.5F}, {});
  ExpectTensorNear(
      RunOp({"ReduceMean", {x}, {AttrInts("axes", {-3, 2}), AttrInt("keepdims", 0)}})[0],
      {7.5F, 11.5F, 15.5F}, {3});
}

TEST(ReduceTest, EmptyReductionsFollowPyTorch) {
  // torch.zeros(0, 3).sum(0) = [0, 0, 0]; .mean(0) = [nan, nan, nan].
  const Tensor x(DType::kFloat32, {0, 3});
  ExpectTensorNear(RunOp({"ReduceSum", {x, Axes({0})}, {AttrInt("keepdims", 0)}})[0], {0, 0, 0},
                   {3});
  const Tensor mean = RunOp({"ReduceMean", {x}, {AttrInts("axes", {0})}})[0];
  ASSERT_EQ(mean.shape(), (Shape{1, 3}));
  EXPECT_TRUE(std::isnan(mean.GetAsDouble(0)));
  // Reducing the other axis gives an empty result.
  EXPECT_EQ(RunOp({"ReduceSum", {x, Axes({1})}})[0].shape(), (Shape{0, 1}));
}

// Sum over `axes` by direct index arithmetic, as an independent reference.
std::vector<float> NaiveSum(const Tensor& x, const std::vector<bool>& reduced) {
  Shape out_shape;
  for (size_t i = 0; i < x.rank(); ++i) out_shape.push_back(reduced[i] ? 1 : x.dim(i));
  std::vector<double> out(static_cast<size_t>(tensor::NumElements(out_shape)), 0.0);
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    int64_t rest = flat;
    int64_t o = 0;
    int64_t stride = 1;
    for (size_t axis = x.rank(); axis-- > 0;) {
      const int64_t index = rest % x.dim(axis);
      rest /= x.dim(axis);
      if (!reduced[axis]) o += index * stride;
      stride *= out_shape[axis];
    }
    out[static_cast<size_t>(o)] += x.GetAsDouble(flat);
  }
  return std::vector<float>(out.begin(), out.end());
}

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;
};

const std::vector<ReduceCase>& Cases() {
  static const std::vector<ReduceCase> cases = {
      {{4, 5}, {1}},            // rows
      {{4, 5}, {0}},            // columns
      {{4, 5}, {0, 1}},         // everything
      {{2, 3, 4}, {1}},         // middle axis: [kept, reduced, kept]
      {{2, 3, 4}, {0, 2}},      // [reduced, kept, reduced]
      {{2, 3, 4, 5}, {1, 3}},   // alternating
      {{2, 1, 4, 3}, {1, 2}},   // a size-1 reduced axis merges away
      {{3, 1, 2}, {1}},         // only a size-1 axis: a copy
      {{5}, {-1}},              // negative axis, to a scalar
      {{2, 3, 2, 2}, {-3, 0}},  // negative and unordered
  };
  return cases;
}

// ReduceSum takes its axes as an input (opset 13+), ReduceMean as an attribute (through 17).
OpCase MakeCase(const std::string& op_type, const Tensor& x, const std::vector<int64_t>& axes,
                bool keepdims) {
  if (op_type == "ReduceSum") return {op_type, {x, Axes(axes)}, {AttrInt("keepdims", keepdims)}};
  return {op_type, {x}, {AttrInts("axes", axes), AttrInt("keepdims", keepdims)}};
}

class ReduceShapesTest : public ::testing::TestWithParam<std::tuple<std::string, size_t, bool>> {};

TEST_P(ReduceShapesTest, ForwardMatchesReference) {
  const auto& [op_type, index, keepdims] = GetParam();
  const ReduceCase& c = Cases()[index];
  const Tensor x = RandomTensor(c.shape, 3);
  std::vector<bool> reduced(c.shape.size(), false);
  int64_t count = 1;
  Shape out_shape;
  for (int64_t axis : c.axes) {
    if (axis < 0) axis += static_cast<int64_t>(c.shape.size());
    reduced[static_cast<size_t>(axis)] = true;
    count *= c.shape[static_cast<size_t>(axis)];
  }
  for (size_t i = 0; i < c.shape.size(); ++i) {
    if (!reduced[i]) out_shape.push_back(c.shape[i]);
    if (reduced[i] && keepdims) out_shape.push_back(1);
  }
  std::vector<float> expected = NaiveSum(x, reduced);
  if (op_type == "ReduceMean") {
    for (float& v : expected) v /= static_cast<float>(count);
  }
  ExpectTensorNear(RunOp(MakeCase(op_type, x, c.axes, keepdims))[0], expected, out_shape, 1e-5F);
}

TEST_P(ReduceShapesTest, GradientsMatchFiniteDifferences) {
  const auto& [op_type, index, keepdims] = GetParam();
  const ReduceCase& c = Cases()[index];
  ExpectGradientsMatch(MakeCase(op_type, RandomTensor(c.shape, 4), c.axes, keepdims));
}

INSTANTIATE_TEST_SUITE_P(AllCases, ReduceShapesTest,
                         ::testing::Combine(::testing::Values("ReduceSum", "ReduceMean"),
                                            ::testing::Range<size_t>(0, 10), ::testing::Bool()));

TEST(ReduceTest, LargeReductionsAreAccurateAndParallelCorrect) {
  // 2^20 copies of 0.1F: a float running sum ends at 105891.84 (1% off); torch.sum gives
  // 104857.617 (2 ulp); the kernel must be as close.
  const Tensor x = Tensor::Full({1 << 20}, 0.1F);
  const double exact = 0.1F * static_cast<double>(1 << 20);
  EXPECT_NEAR(RunOp({"ReduceSum", {x}})[0].GetAsDouble(0), exact, exact * 1e-6);
  // Many rows and many columns, both reduction layouts.
  const Tensor big = RandomTensor({300, 257}, 9);
  ExpectTensorNear(RunOp({"ReduceSum", {big, Axes({1})}, {AttrInt("keepdims", 0)}})[0],
                   NaiveSum(big, {false, true}), {300}, 1e-4F);
  ExpectTensorNear(RunOp({"ReduceSum", {big, Axes({0})}, {AttrInt("keepdims", 0)}})[0],
                   NaiveSum(big, {true, false}), {257}, 1e-4F);
}

TEST(ReduceTest, BadAxesAreClearErrors) {
  const Tensor x = RandomTensor({2, 3}, 1);
  ExpectNodeError({"ReduceSum", {x, Axes({2})}}, "axis 2 is out of range");
  ExpectNodeError({"ReduceSum", {x, Axes({1, -1})}}, "appears twice");
  ExpectNodeError({"ReduceMean", {x}, {AttrInts("axes", {-3})}}, "out of range");
  ExpectNodeError({"ReduceSum", {x, Tensor::FromVector<float>({1}, {0})}}, "axes");
  ExpectNodeError({"ReduceMean", {Tensor::FromVector<int64_t>({1}, {1})}}, "float32");
  // From opset 13 the axes of ReduceSum are an input; an attribute is a malformed model.
  EXPECT_THROW(RunOp({"ReduceSum", {x}, {AttrInts("axes", {0})}}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
