// A model variable as the strategy compiler sees it: names, shapes, dtypes and sparsity only,
// so a weight-stripped graph is enough to compile a Strategy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autodist::graph {

struct Variable {
  std::string name;            // ONNX initializer name
  std::vector<int64_t> shape;  // empty for scalars
  int32_t data_type = 1;       // onnx::TensorProto::DataType (1 = FLOAT)
  int64_t bytes = 0;           // number of elements x element size
  bool sparse = false;         // every use is Gather on axis 0: IndexedSlices gradient
  bool partitionable = true;   // false when read inside a Loop/If/Scan body
  bool trainable = true;       // false for replica-local state (BatchNorm running statistics)
  std::string gradient_name;   // tensor name the runtime gives its gradient
};

// Number of elements of a shape (1 for a scalar).
int64_t NumElements(const std::vector<int64_t>& shape);

}  // namespace autodist::graph

namespace autodist::graph {

// Name of an onnx::TensorProto::DataType value ("float", "float16", ...), "type<N>" if unknown.
std::string DataTypeName(int32_t data_type);

// Bytes per element of a float data type; 0 for types that are not variables.
int64_t FloatElementSize(int32_t data_type);

}  // namespace autodist::graph
