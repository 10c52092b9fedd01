// The kernels of LayerNormalization on CUDA over X as [rows, size], the CPU kernel's formulas
// (runtime/ops/nn/layer_normalization.cc) operation for operation: a row's statistics are sums
// in double of float terms; Y, dX and the per-row constants round as the CPU's do. A row takes a
// warp (lanes striding it, shuffles combining them); the column sums of dScale and dB go in two
// stages, slices of rows then the slices in order, so that every run gives the same bits.
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

constexpr int kWarp = 32;
// Rows a slice of the column sums takes.
constexpr int64_t kRowsPerSlice = 128;

__device__ double WarpSum(double value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffU, value, offset);
  }
  return value;
}

__device__ int64_t WarpIndex() {
  return (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
}
__device__ int64_t WarpCount() { return gridDim.x * static_cast<int64_t>(blockDim.x) / kWarp; }

__global__ void LayerNormForwardKernel(const float* x, const float* scale, const float* bias,
                                       int64_t rows, int64_t size, float epsilon, float* y,
                                       float* mean, float* invstd) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (int64_t r = WarpIndex(); r < rows; r += WarpCount()) {
    const float* row = x + r * size;
    double sum = 0.0;
    for (int64_t i = lane; i < size; i += kWarp) sum += row[i];
    sum = WarpSum(sum);
    const auto m = static_cast<float>(size > 0 ? sum / static_cast<double>(size) : 0.0);
    double squares = 0.0;
    for (int64_t i = lane; i < size; i += kWarp) {
      const float d = row[i] - m;
      squares += d * d;
    }
    squares = WarpSum(squares);
    const double var = size > 0 ? squares / static_cast<double>(size) : 0.0;
    const auto inv = static_cast<float>(1.0 / sqrt(var + epsilon));
    if (lane == 0) {
      mean[r] = m;
      invstd[r] = inv;
    }
    float* out = y + r * size;
    for (int64_t i = lane; i < size; i += kWarp) out[i] = (row[i] - m) * inv * scale[i] + bias[i];
  }
}

__global__ void LayerNormInputGradKernel(const float* dy, const float* x, const float* scale,
                                         const float* mean, const float* invstd,
                                         const float* d_mean, const float* d_invstd, int64_t rows,
                                         int64_t size, float* dx) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const auto n = static_cast<double>(size);
  for (int64_t r = WarpIndex(); r < rows; r += WarpCount()) {
    const float* row = x + r * size;
    const float* g = dy != nullptr ? dy + r * size : nullptr;
    const float m = mean[r];
    const float inv = invstd[r];
    double sum_gs = 0.0;
    double sum_gs_xhat = 0.0;
    if (g != nullptr) {
      for (int64_t i = lane; i < size; i += kWarp) {
        sum_gs += g[i] * scale[i];
        sum_gs_xhat += g[i] * scale[i] * (row[i] - m) * inv;
      }
      sum_gs = WarpSum(sum_gs);
      sum_gs_xhat = WarpSum(sum_gs_xhat);
    }
    const auto c0 =
        static_cast<float>(-inv * sum_gs / n + (d_mean != nullptr ? d_mean[r] / n : 0.0));
    const auto c1 = static_cast<float>(
        -inv * sum_gs_xhat / n -
        (d_invstd != nullptr ? static_cast<double>(d_invstd[r]) * inv * inv / n : 0.0));
    float* out = dx + r * size;
    for (int64_t i = lane; i < size; i += kWarp) {
      out[i] = g != nullptr ? inv * g[i] * scale[i] + c0 + c1 * (row[i] - m) * inv
                            : c0 + c1 * (row[i] - m) * inv;
    }
  }
}

// partial[slice][c] for kind 0: Σ g (x - mean) invstd, kind 1: Σ g, over the slice's rows.
__global__ void LayerNormColumnSliceKernel(const float* dy, const float* x, const float* mean,
                                           const float* invstd, int64_t rows, int64_t size,
                                           double* partial_scale, double* partial_bias) {
  const int64_t slice = blockIdx.y;
  const int64_t end = rows < (slice + 1) * kRowsPerSlice ? rows : (slice + 1) * kRowsPerSlice;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < size;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double ds = 0.0;
    double db = 0.0;
    for (int64_t r = slice * kRowsPerSlice; r < end; ++r) {
      const float g = dy[r * size + c];
      ds += g * (x[r * size + c] - mean[r]) * invstd[r];
      db += g;
    }
    partial_scale[slice * size + c] = ds;
    partial_bias[slice * size + c] = db;
  }
}

__global__ void LayerNormColumnTotalKernel(const double* partial_scale, const double* partial_bias,
                                           int64_t slices, int64_t size, float* dscale,
                                           float* dbias) {
  for (int64_t c = First(); c < size; c += Stride()) {
    double ds = 0.0;
    double db = 0.0;
    for (int64_t s = 0; s < slices; ++s) {
      ds += partial_scale[s * size + c];
      db += partial_bias[s * size + c];
    }
    dscale[c] = static_cast<float>(ds);
    dbias[c] = static_cast<float>(db);
  }
}

unsigned WarpBlocks(int64_t rows) {
  constexpr int64_t kWarpsPerBlock = kThreads / kWarp;
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

int64_t LayerNormColumnSlices(int64_t rows) {
  return rows == 0 ? 1 : (rows + kRowsPerSlice - 1) / kRowsPerSlice;
}

void LaunchLayerNormForward(const float* x, const float* scale, const float* bias, int64_t rows,
                            int64_t size, float epsilon, float* y, float* mean, float* invstd,
                            cudaStream_t stream) {
  if (rows == 0) return;
  LayerNormForwardKernel<<<WarpBlocks(rows), kThreads, 0, stream>>>(x, scale, bias, rows, size,
                                                                    epsilon, y, mean, invstd);
}

void LaunchLayerNormInputGrad(const float* dy, const float* x, const float* scale,
                              const float* mean, const float* invstd, const float* d_mean,
                              const float* d_invstd, int64_t rows, int64_t size, float* dx,
                              cudaStream_t stream) {
  if (rows == 0 || size == 0) return;
  LayerNormInputGradKernel<<<WarpBlocks(rows), kThreads, 0, stream>>>(
      dy, x, scale, mean, invstd, d_mean, d_invstd, rows, size, dx);
}

void LaunchLayerNormParamGrads(const float* dy, const float* x, const float* mean,
                               const float* invstd, int64_t rows, int64_t size, double* scratch,
                               float* dscale, float* dbias, cudaStream_t stream) {
  if (size == 0) return;
  const int64_t slices = LayerNormColumnSlices(rows);
  double* partial_scale = scratch;
  double* partial_bias = scratch + slices * size;
  if (rows > 0) {
    const int64_t x_blocks = (size + kThreads - 1) / kThreads;
    const dim3 grid(static_cast<unsigned>(x_blocks < 65536 ? x_blocks : 65536),
                    static_cast<unsigned>(slices));
    LayerNormColumnSliceKernel<<<grid, kThreads, 0, stream>>>(dy, x, mean, invstd, rows, size,
                                                              partial_scale, partial_bias);
  }
  LayerNormColumnTotalKernel<<<Blocks(size), kThreads, 0, stream>>>(
      partial_scale, partial_bias, rows > 0 ? slices : 0, size, dscale, dbias);
}

}  // namespace autodist::gpu::detail
