#include "runtime/ops/math/blas.h"

#include <cblas.h>

namespace autodist::ops {

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  const auto lda = static_cast<blasint>(trans_a ? m : k);
  const auto ldb = static_cast<blasint>(trans_b ? k : n);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, lda, b, ldb, beta, c, static_cast<blasint>(n));
}

}  // namespace autodist::ops
