// The kernels of BatchNormalization on CUDA: per-channel constants from the batch sums
// (channel_sums.cu) or the input statistics, the affine map, and the gradient. Every per-channel
// formula is the CPU kernel's, operation for operation, in double where it computes in double
// (runtime/ops/nn/batch_normalization.cc); one thread per channel, the channels are few.
#include <type_traits>

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

// Element-wise kernels over [N, C, inner] with per-channel constants, flat: a thread takes four
// elements of one channel (float4) when planes are a multiple of 4 long, one otherwise, and finds
// the channel with a division of 32-bit indices where they fit.
template <typename Index, int Width>
struct ChannelSpan {
  Index inner;
  Index channels;
  Index spans;  // elements / Width

  __device__ Index Channel(Index span) const { return (span * Width / inner) % channels; }
};

template <int Width>
using Vector = std::conditional_t<Width == 4, float4, float>;

template <int Width>
__device__ Vector<Width> Load(const float* p, int64_t span) {
  return reinterpret_cast<const Vector<Width>*>(p)[span];
}
template <int Width>
__device__ void Store(float* p, int64_t span, Vector<Width> v) {
  reinterpret_cast<Vector<Width>*>(p)[span] = v;
}

// fn applied to each lane of the vectors.
template <typename Fn>
__device__ float4 Lanes(const float4& a, const float4& b, Fn fn) {
  return {fn(a.x, b.x), fn(a.y, b.y), fn(a.z, b.z), fn(a.w, b.w)};
}
template <typename Fn>
__device__ float Lanes(float a, float b, Fn fn) {
  return fn(a, b);
}

// out = x * alpha[c] + beta[c] (x null: out = beta[c]).
template <typename Index, int Width>
__global__ void ChannelAffineKernel(const float* x, const float* alpha, const float* beta,
                                    ChannelSpan<Index, Width> span, float* out) {
  for (Index i = blockIdx.x * blockDim.x + threadIdx.x; i < span.spans;
       i += gridDim.x * blockDim.x) {
    const Index c = span.Channel(i);
    const float b = beta[c];
    if (x == nullptr) {
      Store<Width>(out, i,
                   Lanes(Vector<Width>{}, Vector<Width>{}, [&](float, float) { return b; }));
      continue;
    }
    const float a = alpha[c];
    const Vector<Width> v = Load<Width>(x, i);
    Store<Width>(out, i, Lanes(v, v, [&](float e, float) { return e * a + b; }));
  }
}

// dx = a[c] dy + b[c] x + k[c] (dy null: b[c] x + k[c]).
template <typename Index, int Width>
__global__ void InputGradientKernel(const float* dy, const float* x, const float* coefficients,
                                    ChannelSpan<Index, Width> span, float* dx) {
  for (Index i = blockIdx.x * blockDim.x + threadIdx.x; i < span.spans;
       i += gridDim.x * blockDim.x) {
    const Index c = span.Channel(i);
    const float a = coefficients[c];
    const float b = coefficients[span.channels + c];
    const float k = coefficients[2 * span.channels + c];
    const Vector<Width> xs = Load<Width>(x, i);
    if (dy == nullptr) {
      Store<Width>(dx, i, Lanes(xs, xs, [&](float e, float) { return b * e + k; }));
    } else {
      Store<Width>(dx, i, Lanes(Load<Width>(dy, i), xs, [&](float g, float e) {
                     return a * g + b * e + k;
                   }));
    }
  }
}

// Launches Kernel<Index, Width> over `layout` with the narrowest index and widest vector that fit.
// `aligned`: every array the kernel reads or writes element-wise is 16-byte aligned.
template <template <typename, int> class Launch, typename... Args>
void LaunchOverChannels(const ChannelLayout& layout, bool aligned, cudaStream_t stream,
                        Args... args) {
  const int64_t n = layout.batch * layout.channels * layout.inner;
  if (n == 0) return;
  const bool vectors = aligned && layout.inner % 4 == 0;
  const int64_t spans = vectors ? n / 4 : n;
  if (FitsUint32(n)) {
    const auto inner = static_cast<uint32_t>(layout.inner);
    const auto channels = static_cast<uint32_t>(layout.channels);
    if (vectors) {
      Launch<uint32_t, 4>::Run(
          ChannelSpan<uint32_t, 4>{inner, channels, static_cast<uint32_t>(spans)}, stream, args...);
    } else {
      Launch<uint32_t, 1>::Run(
          ChannelSpan<uint32_t, 1>{inner, channels, static_cast<uint32_t>(spans)}, stream, args...);
    }
  } else if (vectors) {
    Launch<int64_t, 4>::Run(ChannelSpan<int64_t, 4>{layout.inner, layout.channels, spans}, stream,
                            args...);
  } else {
    Launch<int64_t, 1>::Run(ChannelSpan<int64_t, 1>{layout.inner, layout.channels, spans}, stream,
                            args...);
  }
}

// Null counts as aligned: it is not read.
bool Aligned(const float* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename Index, int Width>
struct AffineLaunch {
  static void Run(ChannelSpan<Index, Width> span, cudaStream_t stream, const float* x,
                  const float* alpha, const float* beta, float* out) {
    ChannelAffineKernel<Index, Width>
        <<<Blocks(static_cast<int64_t>(span.spans)), kThreads, 0, stream>>>(x, alpha, beta, span,
                                                                            out);
  }
};

template <typename Index, int Width>
struct InputGradientLaunch {
  static void Run(ChannelSpan<Index, Width> span, cudaStream_t stream, const float* dy,
                  const float* x, const float* coefficients, float* dx) {
    InputGradientKernel<Index, Width>
        <<<Blocks(static_cast<int64_t>(span.spans)), kThreads, 0, stream>>>(dy, x, coefficients,
                                                                            span, dx);
  }
};

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
  LaunchOverChannels<AffineLaunch>(layout, Aligned(x) && Aligned(y), stream, x, alpha, beta, y);
}

void LaunchBatchNormGradient(const BatchNormGradient& gradient, cudaStream_t stream) {
  if (gradient.channels == 0) return;
  GradientKernel<<<Blocks(gradient.channels), kThreads, 0, stream>>>(gradient);
}

void LaunchBatchNormInputGradient(const float* dy, const float* x, const float* coefficients,
                                  const ChannelLayout& layout, float* dx, cudaStream_t stream) {
  LaunchOverChannels<InputGradientLaunch>(layout, Aligned(dy) && Aligned(x) && Aligned(dx), stream,
                                          dy, x, coefficients, dx);
}

}  // namespace autodist::gpu::detail
