// Row-major single-precision GEMM through CBLAS (OpenBLAS): C = alpha * op(A) op(B) + beta * C,
// op(A) is [M, K], op(B) is [K, N], C is [M, N]. With an activation, C = act(alpha op(A) op(B) +
// beta C): each task applies it to the slice of C it has just computed, while that is in cache.
#pragma once

#include <cstdint>

#include "runtime/ops/fused_activation.h"

namespace autodist::ops {

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           const float* b, float beta, float* c,
           FusedActivation activation = FusedActivation::kNone);

}  // namespace autodist::ops
