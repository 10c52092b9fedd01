// Copies that move data between layouts on CUDA, for elements of 4 and 8 bytes, on 32-bit
// indices where they fit: Transpose's and Slice's (each output element reads the input through
// the input's strides along the output's axes; runtime/ops/tensor/permutation.h and
// slice_plan.h lay them out), Slice's gradient (the same positions written instead of read), and
// Split's (a range along one axis of an [outer, axis, inner] view, into or out of another).
#include "gpu/device/cuda_error.h"
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

// Element e of the row-major order over the plan's dims sits at in[Σ coordinate_i *
// in_strides[i]]: kScatter false copies it out to out[e] (Transpose, Slice), true writes in[e]
// back to that position of out (Slice's gradient; the positions never repeat).
template <typename Element, typename Index, bool kScatter>
__global__ void StridedKernel(const Element* in, Element* out, StridedCopyPlan plan) {
  const auto n = static_cast<Index>(plan.n);
  for (Index e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
    Index rest = e;
    int64_t at = 0;
    for (int axis = plan.rank - 1; axis >= 0; --axis) {
      const auto dim = static_cast<Index>(plan.dims[axis]);
      const Index coordinate = rest % dim;
      rest /= dim;
      at += static_cast<int64_t>(coordinate) * plan.in_strides[axis];
    }
    if constexpr (kScatter) {
      out[at] = in[e];
    } else {
      out[e] = in[at];
    }
  }
}

template <typename Element, bool kScatter>
void Launch(const void* in, void* out, const StridedCopyPlan& plan, cudaStream_t stream) {
  const auto* from = static_cast<const Element*>(in);
  auto* to = static_cast<Element*>(out);
  if (FitsUint32(plan.n)) {
    StridedKernel<Element, uint32_t, kScatter>
        <<<Blocks(plan.n), kThreads, 0, stream>>>(from, to, plan);
  } else {
    StridedKernel<Element, int64_t, kScatter>
        <<<Blocks(plan.n), kThreads, 0, stream>>>(from, to, plan);
  }
}

// dst[o, dst_offset + j, i] = src[o, src_offset + j, i] for j < count, over [outer, axis, inner].
template <typename Element, typename Index>
__global__ void AxisRangeKernel(const Element* src, Index src_axis, Index src_offset, Element* dst,
                                Index dst_axis, Index dst_offset, Index count, Index inner,
                                Index n) {
  for (Index e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
    const Index i = e % inner;
    const Index j = (e / inner) % count;
    const Index o = e / (inner * count);
    dst[(o * dst_axis + dst_offset + j) * inner + i] =
        src[(o * src_axis + src_offset + j) * inner + i];
  }
}

template <typename Element>
void LaunchAxisRange(const void* src, int64_t src_axis, int64_t src_offset, void* dst,
                     int64_t dst_axis, int64_t dst_offset, int64_t count, int64_t outer,
                     int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * count * inner;
  const auto* in = static_cast<const Element*>(src);
  auto* out = static_cast<Element*>(dst);
  if (FitsUint32(outer * (src_axis > dst_axis ? src_axis : dst_axis) * inner)) {
    AxisRangeKernel<Element, uint32_t><<<Blocks(n), kThreads, 0, stream>>>(
        in, static_cast<uint32_t>(src_axis), static_cast<uint32_t>(src_offset), out,
        static_cast<uint32_t>(dst_axis), static_cast<uint32_t>(dst_offset),
        static_cast<uint32_t>(count), static_cast<uint32_t>(inner), static_cast<uint32_t>(n));
  } else {
    AxisRangeKernel<Element, int64_t><<<Blocks(n), kThreads, 0, stream>>>(
        in, src_axis, src_offset, out, dst_axis, dst_offset, count, inner, n);
  }
}

}  // namespace

void LaunchCopyAxisRange(const void* src, int64_t src_axis, int64_t src_offset, void* dst,
                         int64_t dst_axis, int64_t dst_offset, int64_t count, int64_t outer,
                         int64_t inner, size_t element_size, cudaStream_t stream) {
  if (outer * count * inner == 0) return;
  if (element_size == 8) {
    LaunchAxisRange<uint64_t>(src, src_axis, src_offset, dst, dst_axis, dst_offset, count, outer,
                              inner, stream);
  } else {
    LaunchAxisRange<uint32_t>(src, src_axis, src_offset, dst, dst_axis, dst_offset, count, outer,
                              inner, stream);
  }
}

void LaunchStridedCopy(const void* in, void* out, size_t element_size, const StridedCopyPlan& plan,
                       cudaStream_t stream) {
  if (plan.n == 0) return;
  if (element_size == 8) {
    Launch<uint64_t, false>(in, out, plan, stream);
  } else {
    Launch<uint32_t, false>(in, out, plan, stream);
  }
  CheckCuda(cudaGetLastError(), "launching a strided copy");
}

void LaunchStridedScatter(const void* in, void* out, size_t element_size,
                          const StridedCopyPlan& plan, cudaStream_t stream) {
  if (plan.n == 0) return;
  if (element_size == 8) {
    Launch<uint64_t, true>(in, out, plan, stream);
  } else {
    Launch<uint32_t, true>(in, out, plan, stream);
  }
  CheckCuda(cudaGetLastError(), "launching a strided scatter");
}

}  // namespace autodist::gpu::detail
