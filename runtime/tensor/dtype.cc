#include "runtime/tensor/dtype.h"

#include "runtime/common/error.h"

namespace autodist::tensor {

size_t ElementSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kBool:
      return 1;
    case DType::kUndefined:
      return 0;
  }
  return 0;
}

std::string DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kFloat64:
      return "float64";
    case DType::kUndefined:
      return "undefined";
  }
  return "unknown";
}

DType DTypeFromOnnx(int32_t onnx_type, const std::string& what) {
  switch (onnx_type) {
    case 1:
      return DType::kFloat32;
    case 2:
      return DType::kUInt8;
    case 3:
      return DType::kInt8;
    case 6:
      return DType::kInt32;
    case 7:
      return DType::kInt64;
    case 9:
      return DType::kBool;
    case 11:
      return DType::kFloat64;
    default:
      Fail(ErrorCode::kInvalidArgument,
           "{}: ONNX data type {} is not supported (supported: float, double, int64, int32, "
           "int8, uint8, bool)",
           what, onnx_type);
  }
}

}  // namespace autodist::tensor
