#include <gmock/gmock.h>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(ConcatTest, JoinsAlongAnAxis) {
  const Tensor a = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::FromVector<float>({2, 1}, {5, 6});
  const Tensor c = Tensor::FromVector<float>({2, 3}, {7, 8, 9, 10, 11, 12});
  // Rows of the result: [a0 b0 c0], [a1 b1 c1].
  const std::vector<float> joined = {1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12};
  ExpectTensorNear(RunOp(OpCase{"Concat", {a, b, c}, {AttrInt("axis", 1)}})[0], joined, {2, 6});
  ExpectTensorNear(RunOp(OpCase{"Concat", {a, b, c}, {AttrInt("axis", -1)}})[0], joined, {2, 6});
  ExpectTensorNear(RunOp(OpCase{"Concat", {a, a}, {AttrInt("axis", 0)}})[0],
                   {1, 2, 3, 4, 1, 2, 3, 4}, {4, 2});
}

TEST(ConcatTest, JoinsInt64ShapesAndSkipsEmptyInputs) {
  // The pattern exported graphs use to build a shape: Concat(Shape(x)[:1], [-1]).
  const Tensor batch = Tensor::FromVector<int64_t>({1}, {32});
  const Tensor rest = Tensor::FromVector<int64_t>({1}, {-1});
  const Tensor none(DType::kInt64, {0});
  const Tensor y = RunOp(OpCase{"Concat", {batch, none, rest}, {AttrInt("axis", 0)}})[0];
  EXPECT_EQ(y.dtype(), DType::kInt64);
  ExpectTensorNear(y, {32, -1}, {2});
}

TEST(ConcatTest, MiddleAxisOfLargeTensorsMatchesAnElementwiseReference) {
  const Tensor a = RandomTensor({40, 70, 30}, 1);
  const Tensor b = RandomTensor({40, 5, 30}, 2);
  const Tensor y = RunOp(OpCase{"Concat", {a, b}, {AttrInt("axis", 1)}})[0];
  ASSERT_EQ(y.shape(), (Shape{40, 75, 30}));
  int64_t mismatches = 0;
  for (int64_t i = 0; i < 40; ++i) {
    for (int64_t j = 0; j < 75; ++j) {
      for (int64_t k = 0; k < 30; ++k) {
        const float expected = j < 70 ? a.data<float>()[(i * 70 + j) * 30 + k]
                                      : b.data<float>()[(i * 5 + j - 70) * 30 + k];
        mismatches += y.data<float>()[(i * 75 + j) * 30 + k] != expected ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(ConcatTest, SingleInputIsReturnedAsIs) {
  const Tensor x = RandomTensor({2, 3}, 3);
  EXPECT_TRUE(RunOp(OpCase{"Concat", {x}, {AttrInt("axis", 1)}})[0].SharesStorageWith(x));
}

TEST(ConcatTest, GradientsAreTheBlocksOfTheOutputGradient) {
  for (const int64_t axis : {0, 1, 2, -1, -3}) {
    Shape a{2, 3, 4};
    Shape b{2, 3, 4};
    const auto k = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    b[k] = 1;
    Shape c = a;
    c[k] = 2;
    ExpectGradientsMatch(OpCase{"Concat",
                                {RandomTensor(a, 4), RandomTensor(b, 5), RandomTensor(c, 6)},
                                {AttrInt("axis", axis)}});
  }
  ExpectGradientsMatch(OpCase{"Concat", {RandomTensor({3}, 7)}, {AttrInt("axis", 0)}});
}

TEST(ConcatTest, BadInputsNameTheNode) {
  const Tensor x = RandomTensor({2, 3}, 8);
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Concat", {x, RandomTensor({3, 3}, 9)}, {AttrInt("axis", 1)}});
      },
      ThrowsMessage<Error>(HasSubstr("Concat node 'test_Concat'")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Concat", {x, RandomTensor({2, 3, 1}, 9)}, {AttrInt("axis", 0)}});
      },
      ThrowsMessage<Error>(HasSubstr("does not match input 0")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{
            "Concat", {x, Tensor::FromVector<int64_t>({1, 3}, {1, 2, 3})}, {AttrInt("axis", 0)}});
      },
      ThrowsMessage<Error>(HasSubstr("input 1 is int64 but input 0 is float32")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Concat", {x, x}, {AttrInt("axis", 2)}});
      },
      ThrowsMessage<Error>(HasSubstr("axis 2 is out of range")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Concat", {x, x}});
      },
      ThrowsMessage<Error>(HasSubstr("'axis' is required")));
  EXPECT_THROW(
      RunOp(OpCase{"Concat", {Tensor::Scalar(1), Tensor::Scalar(2)}, {AttrInt("axis", 0)}}), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
