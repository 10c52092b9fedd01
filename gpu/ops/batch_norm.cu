// The kernels of BatchNormalization on CUDA: per-channel constants from the batch sums
// (channel_sums.cu) or the input statistics, the affine map (also Conv's bias fill), and the
// gradient. Every per-channel
// formula is the CPU kernel's, operation for operation, in double where it computes in double
// (runtime/ops/nn/batch_normalization.cc); one thread per channel, the channels are few.
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

__global__ void BatchMeanKernel(const double* sums, int64_t channels, int64_t count, float* mean) {
  for (int64_t c = First(); c < channels; c += Stride()) {
    mean[c] = static_cast<float>(sums[c] / static_cast<double>(count));
  }
}

__global__ void StatisticsKernel(BatchNormStatistics s) {
  const auto count = static_cast<double>(s.count);
  for (int64_t c = First(); c < s.channels; c += Stride()) {
    const bool training = s.sums != nullptr;
    double mean = s.input_mean[c];
    double var = s.input_var[c];
    float batch_var = 0.0F;
    if (training) {
      mean = s.sums[c] / count;
      var = s.squares[c] / count;
      batch_var = static_cast<float>(var);
    }
    const double invstd = 1.0 / sqrt(var + static_cast<double>(s.epsilon));
    const auto mean_f = static_cast<float>(mean);
    s.mean[c] = mean_f;
    s.invstd[c] = static_cast<float>(invstd);
    s.alpha[c] = static_cast<float>(invstd * s.scale[c]);
    s.beta[c] = static_cast<float>(s.bias[c] - mean * invstd * s.scale[c]);
    if (!training) continue;
    const double rest = 1.0 - static_cast<double>(s.momentum);
    const double unbiased = static_cast<double>(batch_var) * count / (count - 1.0);
    if (s.running_mean != nullptr) {
      s.running_mean[c] =
          static_cast<float>(s.input_mean[c] * static_cast<double>(s.momentum) + mean_f * rest);
    }
    if (s.running_var != nullptr) {
      s.running_var[c] =
          static_cast<float>(s.input_var[c] * static_cast<double>(s.momentum) + unbiased * rest);
    }
    if (s.batch_var != nullptr) s.batch_var[c] = batch_var;
  }
}

// Element-wise kernels over [N, C, inner] with per-channel constants: planes of `inner` elements
// on grid rows when planes are long, else flat with 32-bit indices where they fit.
inline constexpr int64_t kShortestRow = 64;

// out = x * alpha[c] + beta[c] (x null: out = beta[c]).
template <typename Index>
__global__ void ChannelAffineFlatKernel(const float* x, const float* alpha, const float* beta,
                                        Index inner, Index channels, Index n, float* out) {
  for (Index i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const Index c = (i / inner) % channels;
    out[i] = x != nullptr ? x[i] * alpha[c] + beta[c] : beta[c];
  }
}

__global__ void ChannelAffineRowsKernel(const float* x, const float* alpha, const float* beta,
                                        ChannelLayout layout, float* out) {
  for (int64_t plane = blockIdx.y; plane < layout.batch * layout.channels; plane += gridDim.y) {
    const int64_t c = plane % layout.channels;
    const float a = alpha != nullptr ? alpha[c] : 0.0F;
    const float b = beta[c];
    const float* in = x != nullptr ? x + plane * layout.inner : nullptr;
    float* target = out + plane * layout.inner;
    for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < layout.inner;
         i += gridDim.x * blockDim.x) {
      target[i] = in != nullptr ? in[i] * a + b : b;
    }
  }
}

void LaunchChannelMap(const float* x, const float* alpha, const float* beta,
                      const ChannelLayout& layout, float* out, cudaStream_t stream) {
  const int64_t n = layout.batch * layout.channels * layout.inner;
  if (n == 0) return;
  if (layout.inner >= kShortestRow) {
    ChannelAffineRowsKernel<<<RowGrid(layout.batch * layout.channels, layout.inner), kThreads, 0,
                              stream>>>(x, alpha, beta, layout, out);
  } else if (FitsUint32(n)) {
    ChannelAffineFlatKernel<uint32_t><<<Blocks(n), kThreads, 0, stream>>>(
        x, alpha, beta, static_cast<uint32_t>(layout.inner), static_cast<uint32_t>(layout.channels),
        static_cast<uint32_t>(n), out);
  } else {
    ChannelAffineFlatKernel<int64_t>
        <<<Blocks(n), kThreads, 0, stream>>>(x, alpha, beta, layout.inner, layout.channels, n, out);
  }
}

__global__ void GradientKernel(BatchNormGradient g) {
  const auto count = static_cast<double>(g.count);
  for (int64_t c = First(); c < g.channels; c += Stride()) {
    const double sum_dy = g.moments != nullptr ? g.moments[c] : 0.0;
    const double sum_dy_xmu = g.moments != nullptr ? g.moments[g.channels + c] : 0.0;
    const float invstd = g.invstd[c];
    if (g.dscale != nullptr) g.dscale[c] = static_cast<float>(sum_dy_xmu * invstd);
    if (g.dbias != nullptr) g.dbias[c] = static_cast<float>(sum_dy);
    double a = static_cast<double>(g.scale[c]) * invstd;
    double b = 0.0;
    double k = 0.0;
    if (g.training) {
      const double momentum_rest = 1.0 - static_cast<double>(g.momentum);
      b = -a * invstd * invstd * sum_dy_xmu / count;
      k = -a * sum_dy / count;
      if (g.d_running_mean != nullptr) k += momentum_rest * g.d_running_mean[c] / count;
      if (g.d_saved_mean != nullptr) k += g.d_saved_mean[c] / count;
      if (g.d_running_var != nullptr) b += momentum_rest * g.d_running_var[c] * 2.0 / (count - 1);
      if (g.d_saved_var != nullptr) b += g.d_saved_var[c] * 2.0 / count;
    }
    if (g.moments == nullptr) a = 0.0;
    g.coefficients[c] = static_cast<float>(a);
    g.coefficients[g.channels + c] = static_cast<float>(b);
    g.coefficients[2 * g.channels + c] = static_cast<float>(k - b * g.mean[c]);
  }
}

// dx = a[c] dy + b[c] x + k[c] (dy null: b[c] x + k[c]).
template <typename Index>
__global__ void InputGradientFlatKernel(const float* dy, const float* x, const float* coefficients,
                                        Index inner, Index channels, Index n, float* dx) {
  const float* a = coefficients;
  const float* b = coefficients + channels;
  const float* k = coefficients + 2 * channels;
  for (Index i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const Index c = (i / inner) % channels;
    dx[i] = dy != nullptr ? a[c] * dy[i] + b[c] * x[i] + k[c] : b[c] * x[i] + k[c];
  }
}

__global__ void InputGradientRowsKernel(const float* dy, const float* x, const float* coefficients,
                                        ChannelLayout layout, float* dx) {
  for (int64_t plane = blockIdx.y; plane < layout.batch * layout.channels; plane += gridDim.y) {
    const int64_t c = plane % layout.channels;
    const float a = coefficients[c];
    const float b = coefficients[layout.channels + c];
    const float k = coefficients[2 * layout.channels + c];
    const int64_t base = plane * layout.inner;
    for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < layout.inner;
         i += gridDim.x * blockDim.x) {
      dx[base + i] = dy != nullptr ? a * dy[base + i] + b * x[base + i] + k : b * x[base + i] + k;
    }
  }
}

}  // namespace

void LaunchBatchMean(const double* sums, int64_t channels, int64_t count, float* mean,
                     cudaStream_t stream) {
  if (channels == 0) return;
  BatchMeanKernel<<<Blocks(channels), kThreads, 0, stream>>>(sums, channels, count, mean);
}

void LaunchBatchNormStatistics(const BatchNormStatistics& statistics, cudaStream_t stream) {
  if (statistics.channels == 0) return;
  StatisticsKernel<<<Blocks(statistics.channels), kThreads, 0, stream>>>(statistics);
}

void LaunchChannelAffine(const float* x, const float* alpha, const float* beta,
                         const ChannelLayout& layout, float* y, cudaStream_t stream) {
  LaunchChannelMap(x, alpha, beta, layout, y, stream);
}

void LaunchFillChannels(const float* values, const ChannelLayout& layout, float* out,
                        cudaStream_t stream) {
  LaunchChannelMap(nullptr, nullptr, values, layout, out, stream);
}

void LaunchBatchNormGradient(const BatchNormGradient& gradient, cudaStream_t stream) {
  if (gradient.channels == 0) return;
  GradientKernel<<<Blocks(gradient.channels), kThreads, 0, stream>>>(gradient);
}

void LaunchBatchNormInputGradient(const float* dy, const float* x, const float* coefficients,
                                  const ChannelLayout& layout, float* dx, cudaStream_t stream) {
  const int64_t n = layout.batch * layout.channels * layout.inner;
  if (n == 0) return;
  if (layout.inner >= kShortestRow) {
    InputGradientRowsKernel<<<RowGrid(layout.batch * layout.channels, layout.inner), kThreads, 0,
                              stream>>>(dy, x, coefficients, layout, dx);
  } else if (FitsUint32(n)) {
    InputGradientFlatKernel<uint32_t><<<Blocks(n), kThreads, 0, stream>>>(
        dy, x, coefficients, static_cast<uint32_t>(layout.inner),
        static_cast<uint32_t>(layout.channels), static_cast<uint32_t>(n), dx);
  } else {
    InputGradientFlatKernel<int64_t><<<Blocks(n), kThreads, 0, stream>>>(
        dy, x, coefficients, layout.inner, layout.channels, n, dx);
  }
}

}  // namespace autodist::gpu::detail
