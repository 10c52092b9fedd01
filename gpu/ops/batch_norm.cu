// The kernels of BatchNormalization on CUDA: per-channel constants from the batch sums
// (channel_sums.cu) or the input statistics, the affine map, and the gradient. Every per-channel
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

__global__ void ChannelAffineKernel(const float* x, const float* alpha, const float* beta,
                                    ChannelLayout layout, float* y) {
  const int64_t n = layout.batch * layout.channels * layout.inner;
  for (int64_t i = First(); i < n; i += Stride()) {
    const int64_t c = (i / layout.inner) % layout.channels;
    y[i] = x[i] * alpha[c] + beta[c];
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

__global__ void InputGradientKernel(const float* dy, const float* x, const float* coefficients,
                                    ChannelLayout layout, float* dx) {
  const int64_t n = layout.batch * layout.channels * layout.inner;
  const float* a = coefficients;
  const float* b = coefficients + layout.channels;
  const float* k = coefficients + 2 * layout.channels;
  for (int64_t i = First(); i < n; i += Stride()) {
    const int64_t c = (i / layout.inner) % layout.channels;
    dx[i] = dy != nullptr ? a[c] * dy[i] + b[c] * x[i] + k[c] : b[c] * x[i] + k[c];
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
  const int64_t n = layout.batch * layout.channels * layout.inner;
  if (n == 0) return;
  ChannelAffineKernel<<<Blocks(n), kThreads, 0, stream>>>(x, alpha, beta, layout, y);
}

void LaunchBatchNormGradient(const BatchNormGradient& gradient, cudaStream_t stream) {
  if (gradient.channels == 0) return;
  GradientKernel<<<Blocks(gradient.channels), kThreads, 0, stream>>>(gradient);
}

void LaunchBatchNormInputGradient(const float* dy, const float* x, const float* coefficients,
                                  const ChannelLayout& layout, float* dx, cudaStream_t stream) {
  const int64_t n = layout.batch * layout.channels * layout.inner;
  if (n == 0) return;
  InputGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(dy, x, coefficients, layout, dx);
}

}  // namespace autodist::gpu::detail
