// What the LayerNormalization kernels of every backend read of their node and resolve against X
// (opset 17): the normalized axes [axis, rank), X as [rows, size], and the check that Scale and B
// broadcast to the normalized shape, with the errors a user sees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/ops/node_info.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops::nn {

struct LayerNormAttributes {
  int64_t axis = -1;
  float epsilon = 1e-5F;
};

// Throws InvalidArgument naming the node for a stash_type other than 1 (float).
LayerNormAttributes ParseLayerNorm(const NodeInfo& node);

struct LayerNormLayout {
  size_t axis = 0;
  int64_t rows = 0;           // prod(shape[:axis])
  int64_t size = 0;           // prod(shape[axis:])
  tensor::Shape normalized;   // shape[axis:]
  tensor::Shape stats_shape;  // shape with 1 from axis on: Mean's and InvStdDev's
};

LayerNormLayout ResolveLayerNorm(int64_t axis, const tensor::Shape& shape, const std::string& what);

// Throws InvalidArgument naming `what` and `name` unless `t` is float32 and broadcasts to the
// normalized shape.
void CheckLayerNormOperand(const tensor::Tensor& t, const LayerNormLayout& l, const char* name,
                           const std::string& what);

}  // namespace autodist::ops::nn
