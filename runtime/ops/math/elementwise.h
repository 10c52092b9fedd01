// Loops shared by the element-wise kernels (math/, activation/): a parallel unary map, and a
// binary map with ONNX multidirectional broadcasting whose inner loop is contiguous and
// vectorizable. Functors are template parameters, so every element costs an inlined call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/ops/parallel.h"
#include "runtime/tensor/broadcast.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops {

// Elements per parallel chunk: below this, waking threads costs more than the loop.
inline constexpr int64_t kElementwiseGrain = int64_t{1} << 15;

// out[i] = fn(in[i]) for i in [0, n).
template <typename T, typename U, typename Fn>
void MapUnary(const T* in, U* out, int64_t n, Fn fn) {
  ParallelFor(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) out[i] = fn(in[i]);
  });
}

// out[i] = fn(a[i], b[i]) for i in [0, n): same-shape operands (also the gradient loops).
template <typename T, typename U, typename Fn>
void MapBinary(const T* a, const T* b, U* out, int64_t n, Fn fn) {
  ParallelFor(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) out[i] = fn(a[i], b[i]);
  });
}

namespace detail {

// The broadcast of two operands with size-1 axes dropped and adjacent axes merged wherever both
// operands stay contiguous across them, so that [N, C, H, W] + [C, 1, 1] becomes three axes
// and [N, C] + [C] two. The innermost axis then has strides 0 or 1 in each operand.
struct CollapsedBroadcast {
  std::vector<int64_t> dims;
  std::vector<int64_t> a_strides;
  std::vector<int64_t> b_strides;
};

inline CollapsedBroadcast CollapseBroadcast(const tensor::Shape& a_shape,
                                            const tensor::Shape& b_shape,
                                            const tensor::Shape& out_shape) {
  const std::vector<int64_t> a_strides = tensor::BroadcastStrides(a_shape, out_shape);
  const std::vector<int64_t> b_strides = tensor::BroadcastStrides(b_shape, out_shape);
  CollapsedBroadcast c;
  for (size_t i = 0; i < out_shape.size(); ++i) {
    const int64_t dim = out_shape[i];
    if (dim == 1) continue;
    if (!c.dims.empty() && c.a_strides.back() == a_strides[i] * dim &&
        c.b_strides.back() == b_strides[i] * dim) {
      c.dims.back() *= dim;
      c.a_strides.back() = a_strides[i];
      c.b_strides.back() = b_strides[i];
    } else {
      c.dims.push_back(dim);
      c.a_strides.push_back(a_strides[i]);
      c.b_strides.push_back(b_strides[i]);
    }
  }
  return c;
}

}  // namespace detail

// out = fn(a, b) with `a` of `a_shape` and `b` of `b_shape` broadcast to `out_shape` (their
// broadcast shape, or any shape both broadcast to, e.g. to expand one operand). Equal shapes and
// scalar operands run as flat loops; otherwise rows of the innermost merged axis run in
// parallel, each a contiguous loop.
template <typename T, typename U, typename Fn>
void BroadcastBinary(const T* a, const tensor::Shape& a_shape, const T* b,
                     const tensor::Shape& b_shape, U* out, const tensor::Shape& out_shape, Fn fn) {
  const int64_t n = tensor::NumElements(out_shape);
  if (n == 0) return;
  // An operand with as many elements as the output has the output's layout (broadcasting only
  // stretches size-1 axes).
  const bool a_full = tensor::NumElements(a_shape) == n;
  const bool b_full = tensor::NumElements(b_shape) == n;
  if (a_full && b_full) {
    MapBinary(a, b, out, n, fn);
    return;
  }
  if (a_full && tensor::NumElements(b_shape) == 1) {
    const T y = b[0];
    MapUnary(a, out, n, [&](T x) { return fn(x, y); });
    return;
  }
  if (b_full && tensor::NumElements(a_shape) == 1) {
    const T x = a[0];
    MapUnary(b, out, n, [&](T y) { return fn(x, y); });
    return;
  }
  const detail::CollapsedBroadcast c = detail::CollapseBroadcast(a_shape, b_shape, out_shape);
  const size_t rank = c.dims.size();  // >= 1: a one-element result was handled above
  const int64_t inner = c.dims[rank - 1];
  const bool a_moves = c.a_strides[rank - 1] != 0;
  const bool b_moves = c.b_strides[rank - 1] != 0;
  const int64_t rows = n / inner;
  ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / inner),
              [&](int64_t begin, int64_t end) {
                // Odometer over the outer axes, started at row `begin`.
                std::vector<int64_t> counter(rank, 0);
                int64_t a_offset = 0;
                int64_t b_offset = 0;
                int64_t rest = begin;
                for (size_t axis = rank - 1; axis-- > 0;) {
                  counter[axis] = rest % c.dims[axis];
                  rest /= c.dims[axis];
                  a_offset += counter[axis] * c.a_strides[axis];
                  b_offset += counter[axis] * c.b_strides[axis];
                }
                for (int64_t row = begin; row < end; ++row) {
                  const T* pa = a + a_offset;
                  const T* pb = b + b_offset;
                  U* po = out + row * inner;
                  if (a_moves && b_moves) {
#pragma omp simd
                    for (int64_t i = 0; i < inner; ++i) po[i] = fn(pa[i], pb[i]);
                  } else if (a_moves) {
                    const T y = pb[0];
#pragma omp simd
                    for (int64_t i = 0; i < inner; ++i) po[i] = fn(pa[i], y);
                  } else if (b_moves) {
                    const T x = pa[0];
#pragma omp simd
                    for (int64_t i = 0; i < inner; ++i) po[i] = fn(x, pb[i]);
                  } else {  // both stretched: `out_shape` is larger than their broadcast
                    const U value = fn(pa[0], pb[0]);
                    for (int64_t i = 0; i < inner; ++i) po[i] = value;
                  }
                  for (size_t axis = rank - 1; axis-- > 0;) {
                    ++counter[axis];
                    a_offset += c.a_strides[axis];
                    b_offset += c.b_strides[axis];
                    if (counter[axis] < c.dims[axis]) break;
                    a_offset -= c.a_strides[axis] * c.dims[axis];
                    b_offset -= c.b_strides[axis] * c.dims[axis];
                    counter[axis] = 0;
                  }
                }
              });
}

}  // namespace autodist::ops
