// The element types Cast converts between (cast_value.h has the conversions), for its CPU and
// CUDA kernels.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/common/error.h"
#include "runtime/tensor/dtype.h"

namespace autodist::ops {

inline bool IsFloatType(tensor::DType dtype) {
  return dtype == tensor::DType::kFloat32 || dtype == tensor::DType::kFloat64;
}

// Calls fn(T{}) with the C++ type of `dtype`, one of the seven Cast converts between; throws
// InvalidArgument naming `node` for any other.
template <typename Fn>
void VisitCastType(tensor::DType dtype, const std::string& node, Fn&& fn) {
  switch (dtype) {
    case tensor::DType::kFloat32:
      return fn(float{});
    case tensor::DType::kFloat64:
      return fn(double{});
    case tensor::DType::kInt64:
      return fn(int64_t{});
    case tensor::DType::kInt32:
      return fn(int32_t{});
    case tensor::DType::kUInt8:
      return fn(uint8_t{});
    case tensor::DType::kInt8:
      return fn(int8_t{});
    case tensor::DType::kBool:
      return fn(bool{});
    default:
      break;
  }
  Fail(ErrorCode::kInvalidArgument, "{}: cannot cast a tensor of type {}", node,
       tensor::DTypeName(dtype));
}

// Cast's `to` attribute as a type; throws InvalidArgument naming the node when it is missing or
// not an ONNX data type.
tensor::DType CastTarget(int64_t to, bool present, const std::string& node);

}  // namespace autodist::ops
