// The kernels of powersgd_device.h. The orthonormalization copies the matrix into a column-major
// double scratch (each column contiguous, as the CPU's double copies), runs Gram-Schmidt there
// with deterministic two-stage sums (fixed blocks, then one block over their partial sums), and
// writes the floats back. Compiled without FMA contraction, as the CPU build.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gpu/blas/matmul.h"
#include "gpu/compress/powersgd_device.h"
#include "gpu/device/cuda_error.h"

namespace autodist::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;
// Blocks of the first stage of a sum: their partial sums are added by one block, in order.
constexpr int kPartials = 256;

int Blocks(int64_t items) {
  return static_cast<int>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

void CheckLaunch(const char* what) { CheckCuda(cudaGetLastError(), what); }

__global__ void AddInPlace(float* m, const float* residual, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    m[i] += residual[i];
  }
}

// residual -= m / world (powersgd_compressor.cc's Decompress).
__global__ void SubtractShare(float* residual, const float* m, float world, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    residual[i] -= m[i] / world;
  }
}

__global__ void ToColumns(const float* matrix, int64_t rows, int64_t cols, double* columns) {
  const int64_t count = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols;
    const int64_t c = i % cols;
    columns[c * rows + r] = matrix[i];
  }
}

__global__ void FromColumns(const double* columns, int64_t rows, int64_t cols, float* matrix) {
  const int64_t count = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols;
    const int64_t c = i % cols;
    matrix[i] = static_cast<float>(columns[c * rows + r]);
  }
}

__device__ double BlockSum(double value) {
  __shared__ double sums[kThreads];
  sums[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  return sums[0];
}

// partials[block] = the block's share of sum(a[i] * b[i]).
__global__ void PartialDots(const double* a, const double* b, int64_t count, double* partials) {
  double sum = 0.0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    sum += a[i] * b[i];
  }
  const double block = BlockSum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = block;
}

__global__ void FinishSum(const double* partials, double* out) {
  double sum = 0.0;
  for (int i = static_cast<int>(threadIdx.x); i < kPartials; i += kThreads) sum += partials[i];
  const double total = BlockSum(sum);
  if (threadIdx.x == 0) *out = total;
}

// column -= (*dot) * basis.
__global__ void SubtractProjection(double* column, const double* basis, const double* dot,
                                   int64_t rows) {
  const double factor = *dot;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    column[i] -= factor * basis[i];
  }
}

// column *= 1 / norm, or 0 when it kept at most `relative_epsilon` of its norm
// (powersgd_math.cc's rule); the squared norms before and after are at squares[0] and [1].
__global__ void Normalize(double* column, const double* squares, double relative_epsilon,
                          int64_t rows) {
  const double original_norm = sqrt(squares[0]);
  const double norm = sqrt(squares[1]);
  const double scale = norm > relative_epsilon * original_norm && norm > 0.0 ? 1.0 / norm : 0.0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    column[i] *= scale;
  }
}

void Dot(const double* a, const double* b, int64_t count, double* partials, double* out,
         cudaStream_t stream) {
  PartialDots<<<kPartials, kThreads, 0, stream>>>(a, b, count, partials);
  FinishSum<<<1, kThreads, 0, stream>>>(partials, out);
}

GemmCall Product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                 const float* b, float* c) {
  GemmCall call;
  call.trans_a = trans_a;
  call.trans_b = trans_b;
  call.m = m;
  call.n = n;
  call.k = k;
  call.a = a;
  call.b = b;
  call.c = c;
  return call;  // fp32 arithmetic: the CPU compressor's products
}

}  // namespace

void ProjectOnDevice(float* m, const float* residual, int64_t n, int64_t cols, const float* q,
                     int64_t rank, float* p, int device, cudaStream_t stream) {
  if (residual != nullptr && n * cols > 0) {
    AddInPlace<<<Blocks(n * cols), kThreads, 0, stream>>>(m, residual, n * cols);
    CheckLaunch("adding the PowerSGD residual");
  }
  Sgemm(Product(false, false, n, rank, cols, m, q, p), device, stream);
}

void OrthonormalizeColumnsOnDevice(float* matrix, int64_t rows, int64_t cols,
                                   double relative_epsilon, DevicePool& pool, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  DeviceBuffer columns_buffer =
      pool.Allocate(static_cast<size_t>(rows * cols) * sizeof(double), stream);
  // partials, then the squared norm before and after, then one dot product.
  DeviceBuffer scratch = pool.Allocate((kPartials + 3) * sizeof(double), stream);
  auto* columns = columns_buffer.as<double>();
  double* partials = scratch.as<double>();
  double* squares = partials + kPartials;
  double* dot = squares + 2;
  ToColumns<<<Blocks(rows * cols), kThreads, 0, stream>>>(matrix, rows, cols, columns);
  CheckLaunch("copying P into columns");
  for (int64_t c = 0; c < cols; ++c) {
    double* column = columns + c * rows;
    Dot(column, column, rows, partials, squares, stream);
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t earlier = 0; earlier < c; ++earlier) {
        const double* basis = columns + earlier * rows;
        Dot(basis, column, rows, partials, dot, stream);
        SubtractProjection<<<Blocks(rows), kThreads, 0, stream>>>(column, basis, dot, rows);
      }
    }
    Dot(column, column, rows, partials, squares + 1, stream);
    Normalize<<<Blocks(rows), kThreads, 0, stream>>>(column, squares, relative_epsilon, rows);
    CheckLaunch("orthonormalizing a column of P");
  }
  FromColumns<<<Blocks(rows * cols), kThreads, 0, stream>>>(columns, rows, cols, matrix);
  CheckLaunch("copying P back");
}

void ReprojectOnDevice(const float* m, int64_t n, int64_t cols, const float* p, int64_t rank,
                       float* q, int device, cudaStream_t stream) {
  Sgemm(Product(true, false, cols, rank, n, m, p, q), device, stream);
}

void DecompressOnDevice(float* m, float* residual, int64_t n, int64_t cols, const float* p,
                        const float* q, int64_t rank, int world, int device, cudaStream_t stream) {
  const int64_t count = n * cols;
  if (count == 0) return;
  CheckCuda(cudaMemcpyAsync(residual, m, static_cast<size_t>(count) * sizeof(float),
                            cudaMemcpyDeviceToDevice, stream),
            "keeping M as the PowerSGD residual");
  Sgemm(Product(false, true, n, cols, rank, p, q, m), device, stream);
  SubtractShare<<<Blocks(count), kThreads, 0, stream>>>(residual, m, static_cast<float>(world),
                                                        count);
  CheckLaunch("updating the PowerSGD residual");
}

}  // namespace autodist::gpu
