// A 2-D sliding window resolved against one input size, and the per-position math of the kernels
// that slide it, written once for both backends (AUTODIST_HOST_DEVICE): the CPU's Conv and pooling
// kernels and the CUDA ones (gpu/ops) compute the same taps and the same maxima from it. Plain
// structs and inline functions only, so that nvcc compiles it as well.
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/common/host_device.h"

namespace autodist::ops::nn {

struct WindowGeometry {
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  AUTODIST_HOST_DEVICE int64_t in_size() const { return in_h * in_w; }
  AUTODIST_HOST_DEVICE int64_t out_size() const { return out_h * out_w; }
};

// One output position's window along one axis: its taps inside the input are first, first +
// dilation, ... below end (none when first >= end), and `padded` is the length it spans once
// clipped to the end padding (AveragePool's divisor with count_include_pad; it has no dilation).
struct WindowTaps {
  int64_t first;
  int64_t end;
  int64_t padded;
};

AUTODIST_HOST_DEVICE inline WindowTaps AxisTaps(int64_t out, int64_t stride, int64_t pad_begin,
                                                int64_t pad_end, int64_t kernel, int64_t dilation,
                                                int64_t in) {
  const int64_t start = out * stride - pad_begin;
  const int64_t stop = start + (kernel - 1) * dilation + 1;
  // Taps in the begin padding are skipped whole dilation steps at a time, so the first one kept
  // is still on the window's grid.
  const int64_t first = start >= 0 ? start : start + (-start + dilation - 1) / dilation * dilation;
  const int64_t end = stop < in ? stop : in;
  const int64_t padded_end = stop < in + pad_end ? stop : in + pad_end;
  return {first, end, padded_end - start};
}

AUTODIST_HOST_DEVICE inline WindowTaps RowTaps(const WindowGeometry& g, int64_t oh) {
  return AxisTaps(oh, g.stride_h, g.pad_top, g.pad_bottom, g.kernel_h, g.dilation_h, g.in_h);
}
AUTODIST_HOST_DEVICE inline WindowTaps ColumnTaps(const WindowGeometry& g, int64_t ow) {
  return AxisTaps(ow, g.stride_w, g.pad_left, g.pad_right, g.kernel_w, g.dilation_w, g.in_w);
}

// The maximum of one window of `plane` (in_h x in_w) and its index in the plane. As in PyTorch,
// the first maximum in row-major window order wins ties and a NaN wins over numbers (a later NaN
// over an earlier one). A window wholly in the padding gives -inf and index -1.
struct WindowMax {
  float value;
  int64_t index;
};

AUTODIST_HOST_DEVICE inline WindowMax MaxOfWindow(const float* plane, const WindowGeometry& g,
                                                  const WindowTaps& rows, const WindowTaps& cols) {
  WindowMax best{-HUGE_VALF, -1};
  if (rows.first >= rows.end || cols.first >= cols.end) return best;
  best.index = rows.first * g.in_w + cols.first;
  for (int64_t ih = rows.first; ih < rows.end; ih += g.dilation_h) {
    for (int64_t iw = cols.first; iw < cols.end; iw += g.dilation_w) {
      const float value = plane[ih * g.in_w + iw];
      if (value > best.value || value != value) {  // value != value: NaN
        best.value = value;
        best.index = ih * g.in_w + iw;
      }
    }
  }
  return best;
}

// AveragePool's 1 / divisor of a window: with count_include_pad the window's size clipped to the
// padded input, otherwise the number of input elements in it (PyTorch's avg_pool2d); 0 for a
// window with nothing to divide by. AveragePool has no dilation, so taps are consecutive.
AUTODIST_HOST_DEVICE inline float InverseWindowDivisor(const WindowTaps& rows,
                                                       const WindowTaps& cols,
                                                       bool count_include_pad) {
  const int64_t inside_rows = rows.end > rows.first ? rows.end - rows.first : 0;
  const int64_t inside_cols = cols.end > cols.first ? cols.end - cols.first : 0;
  const int64_t divisor = count_include_pad ? rows.padded * cols.padded : inside_rows * inside_cols;
  return divisor > 0 ? 1.0F / static_cast<float>(divisor) : 0.0F;
}

// The mean of one window of `plane`: the float sum of its taps, row-major, times the inverse
// divisor.
AUTODIST_HOST_DEVICE inline float WindowMean(const float* plane, const WindowGeometry& g,
                                             const WindowTaps& rows, const WindowTaps& cols,
                                             bool count_include_pad) {
  float sum = 0.0F;
  for (int64_t ih = rows.first; ih < rows.end; ++ih) {
    for (int64_t iw = cols.first; iw < cols.end; ++iw) sum += plane[ih * g.in_w + iw];
  }
  return sum * InverseWindowDivisor(rows, cols, count_include_pad);
}

// The output position (along one axis) whose window has input position `in` as its tap `k`, or -1
// when there is none: the inverse of the windows, for kernels that gather over them. Int: the
// GPU's kernels use 32-bit integers, whose division is several times cheaper there.
template <typename Int = int64_t>
AUTODIST_HOST_DEVICE inline Int OutputOfTap(Int in, Int k, Int stride, Int pad_begin, Int dilation,
                                            Int out_size) {
  const Int offset = in + pad_begin - k * dilation;  // = out * stride
  if (offset < 0) return -1;
  Int out = offset;
  if (stride != 1) {
    out = offset / stride;
    if (out * stride != offset) return -1;
  }
  return out < out_size ? out : -1;
}

}  // namespace autodist::ops::nn
