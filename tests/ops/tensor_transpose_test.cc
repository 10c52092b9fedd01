#include <gmock/gmock.h>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

template <typename T>
Tensor Iota(const Shape& shape) {
  Tensor t(tensor::DTypeOf<T>(), shape);
  T* data = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = static_cast<T>(i);
  return t;
}

// Element-by-element reference: output index -> coordinates -> input offset.
template <typename T>
std::vector<T> NaiveTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_strides = tensor::Strides(x.shape());
  Shape out_shape;
  for (const int64_t axis : perm) out_shape.push_back(x.dim(static_cast<size_t>(axis)));
  std::vector<T> out(static_cast<size_t>(x.numel()));
  for (int64_t o = 0; o < x.numel(); ++o) {
    int64_t rest = o;
    int64_t offset = 0;
    for (size_t i = perm.size(); i-- > 0;) {
      offset += (rest % out_shape[i]) * in_strides[static_cast<size_t>(perm[i])];
      rest /= out_shape[i];
    }
    out[static_cast<size_t>(o)] = x.data<T>()[offset];
  }
  return out;
}

template <typename T>
void ExpectMatchesNaive(const Shape& shape, const std::vector<int64_t>& perm) {
  const Tensor x = Iota<T>(shape);
  const Tensor y = RunOp(OpCase{"Transpose", {x}, {AttrInts("perm", perm)}})[0];
  const std::vector<T> expected = NaiveTranspose<T>(x, perm);
  ASSERT_EQ(y.numel(), static_cast<int64_t>(expected.size()));
  const T* data = y.data<T>();
  int64_t mismatches = 0;
  for (size_t i = 0; i < expected.size(); ++i) mismatches += data[i] != expected[i] ? 1 : 0;
  EXPECT_EQ(mismatches, 0) << "shape " << tensor::ShapeToString(shape);
}

TEST(TransposeTest, PermutesAxes) {
  // np.transpose(np.arange(24).reshape(2, 3, 4), (1, 2, 0)), printed by numpy.
  const Tensor y =
      RunOp(OpCase{"Transpose", {Iota<float>({2, 3, 4})}, {AttrInts("perm", {1, 2, 0})}})[0];
  ExpectTensorNear(
      y, {0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23},
      {3, 4, 2});
}

TEST(TransposeTest, DefaultReversesTheAxes) {
  // np.transpose(np.arange(24).reshape(2, 3, 4)).
  const Tensor y = RunOp(OpCase{"Transpose", {Iota<int64_t>({2, 3, 4})}})[0];
  EXPECT_EQ(y.dtype(), DType::kInt64);
  ExpectTensorNear(
      y, {0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23},
      {4, 3, 2});
}

TEST(TransposeTest, MovingOnlyUnitAxesIsAView) {
  const Tensor x = RandomTensor({3, 1, 4}, 1);
  const Tensor y = RunOp(OpCase{"Transpose", {x}, {AttrInts("perm", {1, 0, 2})}})[0];
  EXPECT_TRUE(y.SharesStorageWith(x));
  EXPECT_EQ(y.shape(), (Shape{1, 3, 4}));
  const Tensor z = RunOp(OpCase{"Transpose", {x}, {AttrInts("perm", {2, 1, 0})}})[0];
  EXPECT_FALSE(z.SharesStorageWith(x));
}

TEST(TransposeTest, LargeAndOddShapesMatchAnElementwiseReference) {
  // Sizes beyond a tile and a parallel grain, with ragged tile edges, for 1-, 4- and 8-byte
  // elements; inner axes that stay contiguous (row copies) and that move (tiled copies).
  ExpectMatchesNaive<float>({67, 131}, {1, 0});
  ExpectMatchesNaive<float>({300, 257}, {1, 0});
  ExpectMatchesNaive<float>({8, 33, 12, 40}, {0, 2, 1, 3});  // attention heads: rows move
  ExpectMatchesNaive<float>({8, 33, 12, 40}, {0, 2, 3, 1});
  ExpectMatchesNaive<float>({5, 6, 7, 8, 9}, {4, 2, 0, 3, 1});
  ExpectMatchesNaive<float>({64, 3, 50, 50}, {0, 2, 3, 1});  // NCHW -> NHWC
  ExpectMatchesNaive<int64_t>({70, 45, 3}, {2, 0, 1});
  ExpectMatchesNaive<uint8_t>({129, 65, 2}, {1, 2, 0});
  ExpectMatchesNaive<bool>({2, 1, 3}, {2, 0, 1});
}

TEST(TransposeTest, GradientIsTheInverseTranspose) {
  ExpectGradientsMatch(OpCase{"Transpose", {RandomTensor({2, 3, 4}, 2)}});
  ExpectGradientsMatch(
      OpCase{"Transpose", {RandomTensor({2, 3, 4}, 3)}, {AttrInts("perm", {1, 2, 0})}});
  ExpectGradientsMatch(
      OpCase{"Transpose", {RandomTensor({2, 1, 3, 2}, 4)}, {AttrInts("perm", {3, 0, 2, 1})}});
  ExpectGradientsMatch(OpCase{"Transpose", {RandomTensor({5}, 5)}});
}

TEST(TransposeTest, ScalarsAndEmptyTensors) {
  EXPECT_EQ(RunOp(OpCase{"Transpose", {Tensor::Scalar(2.0F)}})[0].GetAsDouble(0), 2.0);
  EXPECT_EQ(RunOp(OpCase{"Transpose", {Tensor(DType::kFloat32, {0, 3})}})[0].shape(),
            (Shape{3, 0}));
}

TEST(TransposeTest, BadPermutationsNameTheNode) {
  const Tensor x = RandomTensor({2, 3, 4}, 6);
  for (const std::vector<int64_t>& perm :
       {std::vector<int64_t>{0, 1}, {0, 1, 1}, {0, 1, 3}, {-1, 0, 1}}) {
    EXPECT_THAT(
        [&] {
          RunOp(OpCase{"Transpose", {x}, {AttrInts("perm", perm)}});
        },
        ThrowsMessage<Error>(HasSubstr("Transpose node 'test_Transpose'")));
  }
}

}  // namespace
}  // namespace autodist::ops::testing
