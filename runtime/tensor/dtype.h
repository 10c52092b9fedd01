// Element types of tensors. Values are onnx::TensorProto::DataType's, so conversion is a cast.
#pragma once

#include <cstdint>
#include <string>

namespace autodist::tensor {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat64 = 11,
};

// Bytes per element; 0 for kUndefined.
size_t ElementSize(DType dtype);

// "float32", "int64", ...
std::string DTypeName(DType dtype);

// Maps an ONNX data type number to a DType; throws InvalidArgument naming `what` for types the
// engine does not compute with (float16, strings, complex, ...).
DType DTypeFromOnnx(int32_t onnx_type, const std::string& what);

// C++ type -> DType, for typed accessors.
template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType DTypeOf<double>() {
  return DType::kFloat64;
}
template <>
constexpr DType DTypeOf<int64_t>() {
  return DType::kInt64;
}
template <>
constexpr DType DTypeOf<int32_t>() {
  return DType::kInt32;
}
template <>
constexpr DType DTypeOf<uint8_t>() {
  return DType::kUInt8;
}
template <>
constexpr DType DTypeOf<int8_t>() {
  return DType::kInt8;
}
template <>
constexpr DType DTypeOf<bool>() {
  return DType::kBool;
}

}  // namespace autodist::tensor
