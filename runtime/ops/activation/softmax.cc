// Softmax and LogSoftmax on float32.
//   opsets 13..17: normalize along one `axis` (default -1).
//   opsets 1..12:  coerce to 2-D at `axis` (default 1): [d0..d(axis-1)] rows, the rest one
//                  normalized row.
// Both views are [outer, n, inner] with the normalized axis of length n and stride `inner`.
// Gradients read only the output: Softmax dx = y * (dy - sum(dy * y)); LogSoftmax
// dx = dy - exp(y) * sum(dy), sums along the axis.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "runtime/common/error.h"
#include "runtime/ops/activation/softmax_layout.h"
#include "runtime/ops/math/vector_math.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

// Columns of the inner axis handled together when inner > 1: the per-column max and sum live in
// small stack buffers while rows of the axis stream through contiguously.
constexpr int64_t kColumnBlock = 256;

template <bool kLog>
void SoftmaxForward(const float* x, float* y, const SoftmaxLayout& l) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, l.n));
  if (l.inner == 1) {  // contiguous rows
    ParallelFor(l.outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const float* in = x + row * l.n;
        float* out = y + row * l.n;
        float max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max)
        for (int64_t k = 0; k < l.n; ++k) max = in[k] > max ? in[k] : max;
        float sum = 0.0F;
        if constexpr (kLog) {
#pragma omp simd reduction(+ : sum)
          for (int64_t k = 0; k < l.n; ++k) sum += vec::Exp(in[k] - max);
          const float log_sum = std::log(sum);
#pragma omp simd
          for (int64_t k = 0; k < l.n; ++k) out[k] = in[k] - max - log_sum;
        } else {
#pragma omp simd reduction(+ : sum)
          for (int64_t k = 0; k < l.n; ++k) {
            out[k] = vec::Exp(in[k] - max);
            sum += out[k];
          }
          const float scale = 1.0F / sum;
#pragma omp simd
          for (int64_t k = 0; k < l.n; ++k) out[k] *= scale;
        }
      }
    });
    return;
  }
  const int64_t blocks = (l.inner + kColumnBlock - 1) / kColumnBlock;
  ParallelFor(l.outer * blocks, std::max<int64_t>(1, grain / kColumnBlock),
              [&](int64_t begin, int64_t end) {
                float max[kColumnBlock];
                float sum[kColumnBlock];
                for (int64_t item = begin; item < end; ++item) {
                  const int64_t o = item / blocks;
                  const int64_t j0 = (item % blocks) * kColumnBlock;
                  const int64_t width = std::min(kColumnBlock, l.inner - j0);
                  const float* in = x + o * l.n * l.inner + j0;
                  float* out = y + o * l.n * l.inner + j0;
                  std::fill(max, max + width, -std::numeric_limits<float>::infinity());
                  std::fill(sum, sum + width, 0.0F);
                  for (int64_t k = 0; k < l.n; ++k) {
                    const float* row = in + k * l.inner;
#pragma omp simd
                    for (int64_t j = 0; j < width; ++j) max[j] = std::max(max[j], row[j]);
                  }
                  for (int64_t k = 0; k < l.n; ++k) {
                    const float* row = in + k * l.inner;
                    float* dst = out + k * l.inner;
#pragma omp simd
                    for (int64_t j = 0; j < width; ++j) {
                      const float e = vec::Exp(row[j] - max[j]);
                      sum[j] += e;
                      if constexpr (!kLog) dst[j] = e;
                    }
                  }
                  if constexpr (kLog) {
                    for (int64_t j = 0; j < width; ++j) sum[j] = std::log(sum[j]);
                    for (int64_t k = 0; k < l.n; ++k) {
                      const float* row = in + k * l.inner;
                      float* dst = out + k * l.inner;
#pragma omp simd
                      for (int64_t j = 0; j < width; ++j) dst[j] = row[j] - max[j] - sum[j];
                    }
                  } else {
#pragma omp simd
                    for (int64_t j = 0; j < width; ++j) sum[j] = 1.0F / sum[j];
                    for (int64_t k = 0; k < l.n; ++k) {
                      float* dst = out + k * l.inner;
#pragma omp simd
                      for (int64_t j = 0; j < width; ++j) dst[j] *= sum[j];
                    }
                  }
                }
              });
}

// dx from dy and y along the axis: Softmax dx = y * (dy - <dy, y>), LogSoftmax
// dx = dy - exp(y) * sum(dy).
template <bool kLog>
void SoftmaxBackward(const float* g, const float* y, float* dx, const SoftmaxLayout& l) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, l.n));
  if (l.inner == 1) {  // contiguous rows
    ParallelFor(l.outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const float* gr = g + row * l.n;
        const float* yr = y + row * l.n;
        float* dr = dx + row * l.n;
        float dot = 0.0F;
        if constexpr (kLog) {
#pragma omp simd reduction(+ : dot)
          for (int64_t k = 0; k < l.n; ++k) dot += gr[k];
#pragma omp simd
          for (int64_t k = 0; k < l.n; ++k) dr[k] = gr[k] - vec::Exp(yr[k]) * dot;
        } else {
#pragma omp simd reduction(+ : dot)
          for (int64_t k = 0; k < l.n; ++k) dot += gr[k] * yr[k];
#pragma omp simd
          for (int64_t k = 0; k < l.n; ++k) dr[k] = yr[k] * (gr[k] - dot);
        }
      }
    });
    return;
  }
  const int64_t blocks = (l.inner + kColumnBlock - 1) / kColumnBlock;
  ParallelFor(l.outer * blocks, std::max<int64_t>(1, grain / kColumnBlock),
              [&](int64_t begin, int64_t end) {
                float dot[kColumnBlock];
                for (int64_t item = begin; item < end; ++item) {
                  const int64_t o = item / blocks;
                  const int64_t j0 = (item % blocks) * kColumnBlock;
                  const int64_t width = std::min(kColumnBlock, l.inner - j0);
                  const int64_t base = o * l.n * l.inner + j0;
                  std::fill(dot, dot + width, 0.0F);
                  for (int64_t k = 0; k < l.n; ++k) {
                    const float* gr = g + base + k * l.inner;
                    const float* yr = y + base + k * l.inner;
#pragma omp simd
                    for (int64_t j = 0; j < width; ++j) dot[j] += kLog ? gr[j] : gr[j] * yr[j];
                  }
                  for (int64_t k = 0; k < l.n; ++k) {
                    const float* gr = g + base + k * l.inner;
                    const float* yr = y + base + k * l.inner;
                    float* dr = dx + base + k * l.inner;
                    if constexpr (kLog) {
#pragma omp simd
                      for (int64_t j = 0; j < width; ++j) dr[j] = gr[j] - vec::Exp(yr[j]) * dot[j];
                    } else {
#pragma omp simd
                      for (int64_t j = 0; j < width; ++j) dr[j] = yr[j] * (gr[j] - dot[j]);
                    }
                  }
                }
              });
}

template <bool kLog>
class SoftmaxKernel final : public OpKernel {
 public:
  explicit SoftmaxKernel(const NodeInfo& node) : OpKernel(node), axis_(ParseSoftmaxAxis(node)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.dtype() == DType::kFloat32, kInvalidArgument, "{}: input must be float32, got {}",
             ctx.Describe(), tensor::DTypeName(x.dtype()));
    const SoftmaxLayout layout = ResolveSoftmax(axis_, x.shape(), ctx.Describe());
    Tensor y(DType::kFloat32, x.shape());
    if (x.numel() > 0) SoftmaxForward<kLog>(x.data<float>(), y.data<float>(), layout);
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const Tensor& y = ctx.output(0);
    const SoftmaxLayout layout = ResolveSoftmax(axis_, y.shape(), ctx.Describe());
    Tensor dx(DType::kFloat32, y.shape());
    if (y.numel() > 0) {
      SoftmaxBackward<kLog>(dy->data<float>(), y.data<float>(), dx.data<float>(), layout);
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }

 private:
  SoftmaxAxis axis_;
};

using SoftmaxFloatKernel = SoftmaxKernel<false>;
using LogSoftmaxKernel = SoftmaxKernel<true>;

AUTODIST_REGISTER_KERNEL(Softmax, 1, 17, SoftmaxFloatKernel);
AUTODIST_REGISTER_KERNEL(LogSoftmax, 1, 17, LogSoftmaxKernel);

}  // namespace
}  // namespace autodist::ops
