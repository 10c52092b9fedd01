#include <gmock/gmock.h>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// ONNX TensorProto.DataType numbers.
constexpr int64_t kFloat = 1;
constexpr int64_t kUInt8 = 2;
constexpr int64_t kInt8 = 3;
constexpr int64_t kInt32 = 6;
constexpr int64_t kInt64 = 7;
constexpr int64_t kBool = 9;
constexpr int64_t kDouble = 11;

Tensor CastTo(const Tensor& x, int64_t to) {
  return RunOp(OpCase{"Cast", {x}, {AttrInt("to", to)}})[0];
}

TEST(CastTest, FloatToIntegersAndBoolFollowsPyTorch) {
  const Tensor x = Tensor::FromVector<float>({6}, {-2.7F, -0.5F, 0, 0.5F, 2.7F, 300});
  // torch.tensor([-2.7, -0.5, 0, 0.5, 2.7, 300.]).to(dtype).tolist() for each dtype.
  const Tensor i64 = CastTo(x, kInt64);
  EXPECT_EQ(i64.dtype(), DType::kInt64);
  ExpectTensorNear(i64, {-2, 0, 0, 0, 2, 300}, {6});
  const Tensor i32 = CastTo(x, kInt32);
  EXPECT_EQ(i32.dtype(), DType::kInt32);
  ExpectTensorNear(i32, {-2, 0, 0, 0, 2, 300}, {6});
  const Tensor u8 = CastTo(x, kUInt8);
  EXPECT_EQ(u8.dtype(), DType::kUInt8);
  ExpectTensorNear(u8, {254, 0, 0, 0, 2, 44}, {6});
  const Tensor i8 = CastTo(x, kInt8);
  EXPECT_EQ(i8.dtype(), DType::kInt8);
  ExpectTensorNear(i8, {-2, 0, 0, 0, 2, 44}, {6});
  const Tensor b = CastTo(x, kBool);
  EXPECT_EQ(b.dtype(), DType::kBool);
  ExpectTensorNear(b, {1, 1, 0, 1, 1, 1}, {6});
}

TEST(CastTest, IntegersAndBoolToFloat) {
  const Tensor ints = Tensor::FromVector<int64_t>({3}, {-3, 0, 1LL << 40});
  const Tensor f = CastTo(ints, kFloat);
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  ExpectTensorNear(f, {-3, 0, 1099511627776.0F}, {3});
  const Tensor mask = Tensor::FromVector<bool>({3}, {true, false, true});
  ExpectTensorNear(CastTo(mask, kFloat), {1, 0, 1}, {3});
  ExpectTensorNear(CastTo(mask, kInt64), {1, 0, 1}, {3});
  const Tensor d = CastTo(Tensor::FromVector<int32_t>({2}, {7, -8}), kDouble);
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  ExpectTensorNear(d, {7, -8}, {2});
}

TEST(CastTest, SameTypeIsNotCopied) {
  const Tensor x = RandomTensor({3}, 1);
  EXPECT_TRUE(CastTo(x, kFloat).SharesStorageWith(x));
}

TEST(CastTest, GradientFlowsBetweenFloatTypesOnly) {
  ExpectGradientsMatch(OpCase{"Cast", {RandomTensor({2, 3}, 2)}, {AttrInt("to", kFloat)}});
  // float32 -> float64: the float64 output gradient comes back as float32.
  const Tensor x = RandomTensor({2}, 3);
  OpRunner to_double(OpCase{"Cast", {x}, {AttrInt("to", kDouble)}});
  const OpResult result =
      to_double.ForwardBackward({x}, {Tensor::FromVector<double>({2}, {0.25, -1.5})});
  ASSERT_EQ(result.input_grads[0].dtype(), DType::kFloat32);
  ExpectTensorNear(result.input_grads[0], {0.25F, -1.5F}, {2});
  EXPECT_TRUE(to_double.kernel().IsDifferentiable(0));
  // To integers: no gradient.
  OpRunner to_int(OpCase{"Cast", {x}, {AttrInt("to", kInt64)}});
  EXPECT_FALSE(to_int.kernel().IsDifferentiable(0));
  OpRunner to_bool(OpCase{"Cast", {x}, {AttrInt("to", kBool)}});
  EXPECT_FALSE(to_bool.kernel().IsDifferentiable(0));
}

TEST(CastTest, BadTargetTypesNameTheNode) {
  const Tensor x = RandomTensor({2}, 4);
  EXPECT_THAT([&] { CastTo(x, 10); },  // float16
              ThrowsMessage<Error>(HasSubstr("Cast node 'test_Cast'")));
  EXPECT_THAT([&] { CastTo(x, 8); },  // string
              ThrowsMessage<Error>(HasSubstr("not supported")));
  EXPECT_THAT(
      [&] {
        RunOp(OpCase{"Cast", {x}});
      },
      ThrowsMessage<Error>(HasSubstr("'to' is required")));
  EXPECT_THROW(CastTo(x, (int64_t{1} << 32) + 1), Error);
}

}  // namespace
}  // namespace autodist::ops::testing
