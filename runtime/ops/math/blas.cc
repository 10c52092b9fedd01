#include "runtime/ops/math/blas.h"

#include <cblas.h>

#include <algorithm>

#include "runtime/ops/parallel.h"

namespace autodist::ops {
namespace {

// Below this many multiply-adds one thread is faster than waking the pool.
constexpr int64_t kParallelWork = int64_t{1} << 18;

void SgemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

// The epilogue of rows [0, rows) x columns [begin, end) of C (row stride n): the bias (indexed
// by column), then the activation.
void Epilogue(float* c, int64_t rows, int64_t n, int64_t begin, int64_t end, const float* bias,
              FusedActivation activation) {
  if (bias == nullptr && begin == 0 && end == n) {  // whole rows: one contiguous run
    ApplyFusedActivation(activation, c, rows * n);
    return;
  }
  if (bias == nullptr && activation == FusedActivation::kNone) return;
  for (int64_t row = 0; row < rows; ++row) {
    float* out = c + row * n + begin;
    if (bias != nullptr) {
      for (int64_t j = 0; j < end - begin; ++j) out[j] += bias[begin + j];
    }
    ApplyFusedActivation(activation, out, end - begin);
  }
}

}  // namespace

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           const float* b, float beta, float* c, FusedActivation activation, const float* bias) {
  if (m == 0 || n == 0) return;
  const int64_t lda = trans_a ? m : k;
  const int64_t ldb = trans_b ? k : n;
  // OpenBLAS runs single-threaded (parallel.cc): its own pool's yielding waiters competed with
  // ours for the cores. We split the larger output dimension over our pool instead; each slice
  // is an ordinary GEMM on a sub-matrix (same leading dimensions, offset pointers).
  if (NumThreads() <= 1 || m * n * k < kParallelWork) {
    SgemmSerial(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
    Epilogue(c, m, n, 0, n, bias, activation);
    return;
  }
  if (m >= n) {
    ParallelFor(m, std::max<int64_t>(8, m / (int64_t{4} * NumThreads())),
                [&](int64_t begin, int64_t end) {
                  const float* a_rows = trans_a ? a + begin : a + begin * k;
                  SgemmSerial(trans_a, trans_b, end - begin, n, k, alpha, a_rows, lda, b, ldb, beta,
                              c + begin * n, n);
                  Epilogue(c + begin * n, end - begin, n, 0, n, bias, activation);
                });
  } else {
    ParallelFor(n, std::max<int64_t>(16, n / (int64_t{4} * NumThreads())),
                [&](int64_t begin, int64_t end) {
                  const float* b_cols = trans_b ? b + begin * k : b + begin;
                  SgemmSerial(trans_a, trans_b, m, end - begin, k, alpha, a, lda, b_cols, ldb, beta,
                              c + begin, n);
                  Epilogue(c, m, n, begin, end, bias, activation);
                });
  }
}

}  // namespace autodist::ops
