// Pow's element-wise passes on CUDA, with the CPU kernel's forms (runtime/ops/math/pow.cc): a
// one-element exponent over a base of the output's size takes PyTorch's exact forms (x * x for
// 2, sqrt for 0.5, ...), anything else powf per element, broadcast over the output; gradients
// PyTorch's (d base = e * x^(e-1), 0 where e == 0; d exponent = y * log x, 0 where x == 0 and
// e >= 0), each multiplied by the output gradient. powf and logf are the GPU's: within a few
// units in the last place of the CPU's std::pow and std::log.
#include "gpu/device/cuda_error.h"
#include "gpu/ops/broadcast.cuh"
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

// x^e in the form the CPU picks for a one-element exponent (pow.cc, WithScalarPow).
__device__ float ScalarPow(float x, float e) {
  if (e == 0.0F) return 1.0F;
  if (e == 1.0F) return x;
  if (e == 2.0F) return x * x;
  if (e == 3.0F) return x * x * x;
  if (e == 0.5F) return sqrtf(x);
  if (e == -0.5F) return 1.0F / sqrtf(x);
  if (e == -1.0F) return 1.0F / x;
  if (e == -2.0F) return 1.0F / (x * x);
  return powf(x, e);
}

__device__ float ExponentFactor(float x, float e, float y) {
  return x == 0.0F && e >= 0.0F ? 0.0F : y * logf(x);
}

__device__ float Term(PowTerm term, float x, float e, bool scalar) {
  const auto power = [scalar](float base, float exponent) {
    return scalar ? ScalarPow(base, exponent) : powf(base, exponent);
  };
  switch (term) {
    case PowTerm::kValue:
      return power(x, e);
    case PowTerm::kBaseFactor:
      if (scalar) return e * ScalarPow(x, e - 1.0F);
      return e == 0.0F ? 0.0F : e * powf(x, e - 1.0F);
    case PowTerm::kExponentFactor:
      return ExponentFactor(x, e, power(x, e));
  }
  return 0.0F;
}

__global__ void PowScalarKernel(const float* x, float e, const float* g, float* out, int64_t n,
                                PowTerm term) {
  // The CPU zeroes the base's gradient for an exponent of 0 outright (whatever g holds).
  const bool zero = term == PowTerm::kBaseFactor && e == 0.0F;
  for (int64_t i = First(); i < n; i += Stride()) {
    const float f = zero ? 0.0F : Term(term, x[i], e, true);
    out[i] = zero || g == nullptr ? f : g[i] * f;
  }
}

__global__ void PowBroadcastKernel(const float* x, const float* e, const float* g, float* out,
                                   BroadcastPlan plan, PowTerm term) {
  for (int64_t i = First(); i < plan.n; i += Stride()) {
    int64_t x_at = 0;
    int64_t e_at = 0;
    BroadcastOffsets(plan, i, &x_at, &e_at);
    const float f = Term(term, x[x_at], e[e_at], false);
    out[i] = g != nullptr ? g[i] * f : f;
  }
}

}  // namespace

void LaunchPowScalar(const float* x, float e, const float* g, float* out, int64_t n, PowTerm term,
                     cudaStream_t stream) {
  if (n == 0) return;
  PowScalarKernel<<<Blocks(n), kThreads, 0, stream>>>(x, e, g, out, n, term);
  CheckCuda(cudaGetLastError(), "launching a Pow kernel");
}

void LaunchPowBroadcast(const float* x, const float* e, const float* g, float* out,
                        const BroadcastPlan& plan, PowTerm term, cudaStream_t stream) {
  if (plan.n == 0) return;
  PowBroadcastKernel<<<Blocks(plan.n), kThreads, 0, stream>>>(x, e, g, out, plan, term);
  CheckCuda(cudaGetLastError(), "launching a Pow kernel");
}

}  // namespace autodist::gpu::detail
