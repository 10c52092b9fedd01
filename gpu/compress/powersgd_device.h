// PowerSGD's arithmetic on the device, for the PowerSGD compressor of GPU workers: the steps and
// formulas of the CPU compressor (runtime/compress/powersgd_compressor.cc, powersgd_math.h) on one
// gradient matrix M [n, m] (row-major, device memory), with the two all-reduces (of P, then of Q)
// left to the caller between them:
//
//   ProjectOnDevice:            M += residual (error feedback);  P = M Q
//   (all-reduce P)
//   OrthonormalizeColumnsOnDevice(P)
//   ReprojectOnDevice:          Q = M^T P
//   (all-reduce Q)
//   DecompressOnDevice:         residual = M;  M = P Q^T;  residual -= M / world
//
// The products run on cuBLASLt in fp32 (gpu/blas/matmul.h), and the orthonormalization in double,
// as on the CPU: the results agree with the CPU's to float rounding, not bit for bit (the sums
// are ordered differently). Everything is queued on `stream` of GPU `device`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/memory/device_pool.h"

namespace autodist::gpu {

// M += residual (when `residual` is not null), then P [n, r] = M [n, m] Q [m, r].
void ProjectOnDevice(float* m, const float* residual, int64_t n, int64_t cols, const float* q,
                     int64_t rank, float* p, int device, cudaStream_t stream);

// Orthonormalizes the `cols` columns of the row-major rows x cols `matrix` in place:
// compress::OrthonormalizeColumns's Gram-Schmidt (each column orthogonalized twice against the
// earlier ones, in double), and a column left with at most `relative_epsilon` of its norm set to
// zero. Scratch comes from `pool` (the GPU's), ordered on `stream`.
void OrthonormalizeColumnsOnDevice(float* matrix, int64_t rows, int64_t cols,
                                   double relative_epsilon, DevicePool& pool, cudaStream_t stream);

// Q [m, r] = M^T P.
void ReprojectOnDevice(const float* m, int64_t n, int64_t cols, const float* p, int64_t rank,
                       float* q, int device, cudaStream_t stream);

// residual = M; M = P Q^T (the decompressed mean times `world`, once P and Q are sums over the
// ranks); residual -= M / world.
void DecompressOnDevice(float* m, float* residual, int64_t n, int64_t cols, const float* p,
                        const float* q, int64_t rank, int world, int device, cudaStream_t stream);

}  // namespace autodist::gpu
