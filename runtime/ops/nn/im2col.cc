#include "runtime/ops/nn/im2col.h"

#include <algorithm>

namespace autodist::ops::nn {
namespace {

// The output columns [begin, end) whose input column ow * stride + offset lies inside [0, width):
// the inner loops then copy without bounds checks and zero-fill the rest.
struct ColumnRange {
  int64_t begin;
  int64_t end;
};

inline ColumnRange ValidColumns(int64_t offset, int64_t stride, int64_t width, int64_t out_w) {
  // ow * stride + offset >= 0  <=>  ow >= ceil(-offset / stride)
  int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // ow * stride + offset < width  <=>  ow < ceil((width - offset) / stride)
  int64_t end = width - offset <= 0 ? 0 : (width - offset + stride - 1) / stride;
  begin = std::min(begin, out_w);
  end = std::clamp(end, begin, out_w);
  return {begin, end};
}

}  // namespace

void Im2Col(const float* image, int64_t channels, const WindowGeometry& g, float* col,
            bool fill_padding) {
  const int64_t stride = g.stride_w;
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = image + c * g.in_size();
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        float* rows = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * g.out_size();
        const int64_t offset = kj * g.dilation_w - g.pad_left;
        const ColumnRange range = ValidColumns(offset, stride, g.in_w, g.out_w);
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t ih = oh * g.stride_h - g.pad_top + ki * g.dilation_h;
          float* dst = rows + oh * g.out_w;
          if (ih < 0 || ih >= g.in_h) {
            if (fill_padding) std::fill(dst, dst + g.out_w, 0.0F);
            continue;
          }
          if (fill_padding) {
            std::fill(dst, dst + range.begin, 0.0F);
            std::fill(dst + range.end, dst + g.out_w, 0.0F);
          }
          const float* src = plane + ih * g.in_w + offset;
          if (stride == 1) {
#pragma omp simd
            for (int64_t ow = range.begin; ow < range.end; ++ow) dst[ow] = src[ow];
          } else {
            for (int64_t ow = range.begin; ow < range.end; ++ow) dst[ow] = src[ow * stride];
          }
        }
      }
    }
  }
}

void Col2Im(const float* col, int64_t channels, const WindowGeometry& g, float* image) {
  const int64_t stride = g.stride_w;
  for (int64_t c = 0; c < channels; ++c) {
    float* plane = image + c * g.in_size();
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const float* rows = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * g.out_size();
        const int64_t offset = kj * g.dilation_w - g.pad_left;
        const ColumnRange range = ValidColumns(offset, stride, g.in_w, g.out_w);
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t ih = oh * g.stride_h - g.pad_top + ki * g.dilation_h;
          if (ih < 0 || ih >= g.in_h) continue;
          const float* src = rows + oh * g.out_w;
          float* dst = plane + ih * g.in_w + offset;
          if (stride == 1) {
#pragma omp simd
            for (int64_t ow = range.begin; ow < range.end; ++ow) dst[ow] += src[ow];
          } else {
            for (int64_t ow = range.begin; ow < range.end; ++ow) dst[ow * stride] += src[ow];
          }
        }
      }
    }
  }
}

}  // namespace autodist::ops::nn
