// Gemm's shapes, checked once for both backends (gemm.cc, gpu/ops/gemm_kernel.cc): A and B 2-D,
// their inner dimensions equal, C at most 2-D and broadcastable to [M, N].
#pragma once

#include <cstdint>
#include <string>

#include "runtime/common/error.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops {

struct GemmShape {
  int64_t m;
  int64_t n;
  int64_t k;
};

// Throws InvalidArgument naming `node` on shapes Gemm does not take. `c` may be null.
inline GemmShape CheckGemmShapes(const std::string& node, const tensor::Tensor& a,
                                 const tensor::Tensor& b, const tensor::Tensor* c, bool trans_a,
                                 bool trans_b) {
  AD_CHECK(a.rank() == 2 && b.rank() == 2, kInvalidArgument,
           "{}: A and B must be 2-D, got {} and {}", node, tensor::ShapeToString(a.shape()),
           tensor::ShapeToString(b.shape()));
  const GemmShape shape{trans_a ? a.dim(1) : a.dim(0), trans_b ? b.dim(0) : b.dim(1),
                        trans_a ? a.dim(0) : a.dim(1)};
  const int64_t kb = trans_b ? b.dim(1) : b.dim(0);
  AD_CHECK(shape.k == kb, kInvalidArgument,
           "{}: inner dimensions differ: A {} (transA={}) and B {} (transB={})", node,
           tensor::ShapeToString(a.shape()), trans_a, tensor::ShapeToString(b.shape()), trans_b);
  if (c != nullptr) {
    AD_CHECK(c->rank() <= 2, kInvalidArgument, "{}: C must be at most 2-D", node);
    // Each axis of C, right-aligned, is 1 or the output's (ONNX: C broadcasts to [M, N], one way).
    // This runs on every step, so no message is formatted unless the check fails.
    const size_t rank = c->rank();
    const bool rows_fit = rank < 2 || c->dim(0) == 1 || c->dim(0) == shape.m;
    const int64_t columns = rank == 0 ? 1 : c->dim(rank - 1);
    const bool broadcasts = rows_fit && (columns == 1 || columns == shape.n);
    AD_CHECK(broadcasts, kInvalidArgument, "{}: C of shape {} does not broadcast to [{}, {}]", node,
             tensor::ShapeToString(c->shape()), shape.m, shape.n);
  }
  return shape;
}

}  // namespace autodist::ops
