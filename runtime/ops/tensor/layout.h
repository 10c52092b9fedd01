// Helpers shared by the data-movement ops (Reshape, Transpose, Concat, Split, Slice, Squeeze,
// Gather...): axis normalization, a kernel state that remembers an input shape, and one strided
// copy that every layout op reduces to. The copy works on raw bytes, so one implementation
// serves every element type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/kernel.h"

namespace autodist::ops {

// `axis` in [-rank, rank) mapped to [0, rank); throws InvalidArgument naming `node` and `what`
// ("axis", "perm"...) otherwise.
int64_t NormalizeAxis(int64_t axis, int64_t rank, const std::string& node, const std::string& what);

// The shape of an input, kept so that Backward need not keep the input itself alive.
struct ShapeState final : KernelState {
  explicit ShapeState(Shape input_shape) : shape(std::move(input_shape)) {}
  Shape shape;
};

// For every index i of `shape`: dst[sum i_k * dst_strides[k]] = src[sum i_k * src_strides[k]].
// Strides are in elements and may be negative; `element_size` is 1, 2, 4 or 8 bytes. Axes that
// are contiguous in both are merged, so row-major runs become memcpy calls; a transposed inner
// pair is copied in cache-sized tiles; large copies run in parallel.
void CopyStrided(const void* src, const std::vector<int64_t>& src_strides, void* dst,
                 const std::vector<int64_t>& dst_strides, const Shape& shape, size_t element_size);

// Product of shape[begin..end) (1 when empty): the "outer" and "inner" sizes around an axis.
int64_t DimProduct(const Shape& shape, size_t begin, size_t end);

// Views src and dst as [outer, src_axis, inner] and [outer, dst_axis, inner] and copies
// positions [src_begin, src_begin + count) of the middle axis of src to positions
// [dst_begin, dst_begin + count) of dst: one piece of a Concat or a Split.
void CopyAxisRange(const void* src, int64_t src_axis, int64_t src_begin, void* dst,
                   int64_t dst_axis, int64_t dst_begin, int64_t count, int64_t outer, int64_t inner,
                   size_t element_size);

}  // namespace autodist::ops
