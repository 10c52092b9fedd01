#include <gmock/gmock.h>

#include "runtime/ops/onnx_tensor.h"
#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

onnx::AttributeProto AttrTensor(const std::string& name, const Tensor& value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  TensorToProto(value, "value", *a.mutable_t());
  return a;
}

onnx::AttributeProto AttrFloats(const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOATS);
  for (const float v : values) a.add_floats(v);
  return a;
}

Tensor ConstantOf(std::vector<onnx::AttributeProto> attributes) {
  return RunOp(OpCase{"Constant", {}, std::move(attributes)})[0];
}

TEST(ConstantTest, TensorValue) {
  const Tensor y =
      ConstantOf({AttrTensor("value", Tensor::FromVector<float>({2, 2}, {1, -2, 3.5F, 4}))});
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  ExpectTensorNear(y, {1, -2, 3.5F, 4}, {2, 2});
  const Tensor ints =
      ConstantOf({AttrTensor("value", Tensor::FromVector<int64_t>({3}, {0, -1, 9}))});
  EXPECT_EQ(ints.dtype(), DType::kInt64);
  ExpectTensorNear(ints, {0, -1, 9}, {3});
}

TEST(ConstantTest, ScalarAndListAttributes) {
  const Tensor f = ConstantOf({AttrFloat("value_float", 2.5F)});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  ExpectTensorNear(f, {2.5F}, {});
  ExpectTensorNear(ConstantOf({AttrFloats("value_floats", {1.5F, -3})}), {1.5F, -3}, {2});
  const Tensor i = ConstantOf({AttrInt("value_int", -4)});
  EXPECT_EQ(i.dtype(), DType::kInt64);
  ExpectTensorNear(i, {-4}, {});
  const Tensor list = ConstantOf({AttrInts("value_ints", {1, 2, 3})});
  EXPECT_EQ(list.dtype(), DType::kInt64);
  ExpectTensorNear(list, {1, 2, 3}, {3});
}

TEST(ConstantTest, EveryRunReturnsTheSameValue) {
  OpRunner runner(OpCase{"Constant", {}, {AttrInts("value_ints", {5})}});
  const Tensor first = runner.Forward({})[0];
  EXPECT_TRUE(runner.Forward({})[0].SharesStorageWith(first));
}

TEST(ConstantTest, NeedsExactlyOneSupportedValue) {
  EXPECT_THAT([] { ConstantOf({}); },
              ThrowsMessage<Error>(HasSubstr("Constant node 'test_Constant'")));
  EXPECT_THAT(
      [] {
        ConstantOf({AttrInt("value_int", 1), AttrFloat("value_float", 1)});
      },
      ThrowsMessage<Error>(HasSubstr("exactly one of")));
  EXPECT_THAT([] { ConstantOf({AttrString("value_string", "a")}); },
              ThrowsMessage<Error>(HasSubstr("'value_string' is not supported")));
  EXPECT_THAT([] { ConstantOf({AttrInt("value", 1)}); },
              ThrowsMessage<Error>(HasSubstr("must be a tensor")));
}

}  // namespace
}  // namespace autodist::ops::testing
