#include "runtime/graph/variable.h"

namespace autodist::graph {

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (const int64_t dim : shape) count *= dim;
  return count;
}

// Numbers are onnx::TensorProto::DataType's, kept here so that modules which only print or
// size variables need not link ONNX.
std::string DataTypeName(int32_t data_type) {
  switch (data_type) {
    case 1:
      return "float";
    case 2:
      return "uint8";
    case 3:
      return "int8";
    case 6:
      return "int32";
    case 7:
      return "int64";
    case 9:
      return "bool";
    case 10:
      return "float16";
    case 11:
      return "double";
    case 16:
      return "bfloat16";
    default:
      return "type" + std::to_string(data_type);
  }
}

int64_t FloatElementSize(int32_t data_type) {
  switch (data_type) {
    case 1:
      return 4;  // FLOAT
    case 10:
      return 2;  // FLOAT16
    case 11:
      return 8;  // DOUBLE
    case 16:
      return 2;  // BFLOAT16
    default:
      return 0;
  }
}

}  // namespace autodist::graph
