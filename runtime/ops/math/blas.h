// Row-major single-precision GEMM through CBLAS (OpenBLAS): C = alpha * op(A) op(B) + beta * C,
// op(A) is [M, K], op(B) is [K, N], C is [M, N].
#pragma once

#include <cstdint>

namespace autodist::ops {

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           const float* b, float beta, float* c);

}  // namespace autodist::ops
