#include <gmock/gmock.h>

#include <limits>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Tensor List(const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

// np.arange(60).reshape(3, 4, 5) as float32.
Tensor Arange345() {
  std::vector<float> values(60);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return Tensor::FromVector<float>({3, 4, 5}, values);
}

// Slice of `x`; an empty `axes` or `steps` leaves that input absent.
Tensor SliceOf(const Tensor& x, const std::vector<int64_t>& starts,
               const std::vector<int64_t>& ends, const std::vector<int64_t>& axes = {},
               const std::vector<int64_t>& steps = {}) {
  return RunOp(OpCase{"Slice",
                      {x, List(starts), List(ends), axes.empty() ? Tensor() : List(axes),
                       steps.empty() ? Tensor() : List(steps)}})[0];
}

// Expected values below were printed by numpy, whose basic slicing ONNX Slice follows.
TEST(SliceTest, NegativeIndicesAndOpenEnds) {
  // x[1:, :, -3:-1]
  ExpectTensorNear(SliceOf(Arange345(), {1, -3}, {kMax, -1}, {0, 2}),
                   {22, 23, 27, 28, 32, 33, 37, 38, 42, 43, 47, 48, 52, 53, 57, 58}, {2, 4, 2});
}

TEST(SliceTest, NegativeSteps) {
  // x[:, -1::-2]: rows 3 and 1 of every block.
  ExpectTensorNear(SliceOf(Arange345(), {-1}, {kMin}, {1}, {-2}),
                   {15, 16, 17, 18, 19, 5,  6,  7,  8,  9,  35, 36, 37, 38, 39,
                    25, 26, 27, 28, 29, 55, 56, 57, 58, 59, 45, 46, 47, 48, 49},
                   {3, 2, 5});
  // Starts and ends far out of range clamp to a full reversal: x[100:-100:-1] == x[::-1].
  const Tensor reversed = SliceOf(Arange345(), {100}, {-100}, {0}, {-1});
  ASSERT_EQ(reversed.shape(), (Shape{3, 4, 5}));
  EXPECT_EQ(reversed.GetAsDouble(0), 40.0);
  EXPECT_EQ(reversed.GetAsDouble(59), 19.0);
}

TEST(SliceTest, StepsLongerThanOne) {
  // x[:, :, 0:5:3]
  ExpectTensorNear(
      SliceOf(Arange345(), {0}, {5}, {-1}, {3}),
      {0, 3, 5, 8, 10, 13, 15, 18, 20, 23, 25, 28, 30, 33, 35, 38, 40, 43, 45, 48, 50, 53, 55, 58},
      {3, 4, 2});
  // A step far beyond the axis takes just the start: x[1::kMax] and x[2::kMin].
  EXPECT_EQ(SliceOf(Arange345(), {1}, {kMax}, {0}, {kMax}).shape(), (Shape{1, 4, 5}));
  ExpectTensorNear(SliceOf(Arange345(), {2, 0, 4}, {kMin, 1, 5}, {}, {kMin, 1, 1}), {44},
                   {1, 1, 1});
}

TEST(SliceTest, ClampsToEmpty) {
  EXPECT_EQ(SliceOf(Arange345(), {10}, {20}).shape(), (Shape{0, 4, 5}));
  EXPECT_EQ(SliceOf(Arange345(), {2}, {1}, {1}).shape(), (Shape{3, 0, 5}));
  EXPECT_EQ(SliceOf(Arange345(), {0}, {3}, {1}, {-1}).shape(), (Shape{3, 0, 5}));
}

TEST(SliceTest, WholeInputIsNotCopied) {
  const Tensor x = Arange345();
  EXPECT_TRUE(SliceOf(x, {0, 0}, {kMax, 4}, {0, 1}).SharesStorageWith(x));
}

TEST(SliceTest, SlicesInt64ShapesWithInt32Indices) {
  // Shape(x)[1:] as an exported graph computes it, with int32 starts/ends.
  const Tensor shape = Tensor::FromVector<int64_t>({4}, {8, 3, 32, 32});
  const Tensor y = RunOp(OpCase{"Slice",
                                {shape, Tensor::FromVector<int32_t>({1}, {1}),
                                 Tensor::FromVector<int32_t>({1}, {1 << 30})}})[0];
  EXPECT_EQ(y.dtype(), DType::kInt64);
  ExpectTensorNear(y, {3, 32, 32}, {3});
}

TEST(SliceTest, LargeStridedSliceMatchesAnElementwiseReference) {
  // x[5:200:3, ::-2] of a [300, 301] tensor.
  const Tensor x = RandomTensor({300, 301}, 1);
  const Tensor y = SliceOf(x, {5, -1}, {200, kMin}, {}, {3, -2});
  ASSERT_EQ(y.shape(), (Shape{65, 151}));
  int64_t mismatches = 0;
  for (int64_t i = 0; i < 65; ++i) {
    for (int64_t j = 0; j < 151; ++j) {
      mismatches +=
          y.data<float>()[i * 151 + j] != x.data<float>()[(5 + 3 * i) * 301 + 300 - 2 * j] ? 1 : 0;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(SliceTest, GradientScattersBack) {
  const Tensor x = RandomTensor({3, 4, 5}, 2);
  const auto check = [&](const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                         const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
    ExpectGradientsMatch(OpCase{"Slice",
                                {x, List(starts), List(ends), axes.empty() ? Tensor() : List(axes),
                                 steps.empty() ? Tensor() : List(steps)}});
  };
  check({1, -3}, {kMax, -1}, {0, 2}, {});
  check({-1}, {kMin}, {1}, {-2});
  check({0, 4, 1}, {3, 0, 5}, {}, {2, -1, 3});
  check({0}, {5}, {-1}, {3});
  // Exact values: positions not sliced get zero.
  OpRunner runner(
      OpCase{"Slice", {RandomTensor({5}, 3), List({3}), List({0}), List({0}), List({-2})}});
  const OpResult result =
      runner.ForwardBackward({RandomTensor({5}, 3), List({3}), List({0}), List({0}), List({-2})},
                             {Tensor::FromVector<float>({2}, {10, 20})});
  ExpectTensorNear(result.input_grads[0], {0, 20, 0, 10, 0}, {5});
  EXPECT_FALSE(runner.kernel().IsDifferentiable(1));
}

TEST(SliceTest, BadInputsNameTheNode) {
  const Tensor x = Arange345();
  EXPECT_THAT([&] { SliceOf(x, {0}, {1}, {0}, {0}); },
              ThrowsMessage<Error>(HasSubstr("Slice node 'test_Slice'")));
  EXPECT_THAT([&] { SliceOf(x, {0}, {1}, {0}, {0}); }, ThrowsMessage<Error>(HasSubstr("a 0")));
  EXPECT_THAT([&] { SliceOf(x, {0, 0}, {1}); }, ThrowsMessage<Error>(HasSubstr("equal lengths")));
  EXPECT_THAT(
      [&] {
        SliceOf(x, {0, 0}, {1, 1}, {1, -2});
      },
      ThrowsMessage<Error>(HasSubstr("name axis 1 twice")));
  EXPECT_THAT([&] { SliceOf(x, {0}, {1}, {3}); },
              ThrowsMessage<Error>(HasSubstr("axis 3 is out of range")));
  EXPECT_THROW(RunOp(OpCase{"Slice", {x, Tensor::FromVector<float>({1}, {0}), List({1})}}), Error);
  EXPECT_THROW(RunOp(OpCase{"Slice", {x, List({0})}}), Error);  // ends missing
}

}  // namespace
}  // namespace autodist::ops::testing
