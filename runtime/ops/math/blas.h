// Row-major single-precision GEMM through CBLAS (OpenBLAS): C = alpha * op(A) op(B) + beta * C,
// op(A) is [M, K], op(B) is [K, N], C is [M, N]. With a bias [N] and an activation,
// C = act((alpha op(A) op(B) + beta C) + bias): each task adds the bias to every row of the slice
// of C it has just computed, and applies the activation, while that slice is in cache. The bias
// is added to the finished product, as an Add after the GEMM would add it.
#pragma once

#include <cstdint>

#include "runtime/ops/fused_activation.h"

namespace autodist::ops {

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           const float* b, float beta, float* c,
           FusedActivation activation = FusedActivation::kNone, const float* bias = nullptr);

}  // namespace autodist::ops
