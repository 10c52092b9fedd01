// im2col / col2im for 2-D convolution: one image [C, H, W] unfolds into a column matrix
// [C * kH * kW, outH * outW] (row (c, i, j) holds the input element under kernel tap (i, j) of
// channel c for every output position, zero where the tap falls in the padding), so that the
// convolution becomes a GEMM with the weight [M, C * kH * kW]. Col2Im is its adjoint.
#pragma once

#include <cstdint>

#include "runtime/ops/nn/window.h"

namespace autodist::ops::nn {

// Writes the column matrix of `image` (`channels` planes of g.in_h x g.in_w) into `col`. The rows
// of channel c start at col + c * kH * kW * outH * outW, so channels can be unfolded separately.
// Entries under the padding are zero and depend on the geometry alone: with `fill_padding`
// false they are left untouched, so a buffer zeroed once can be reused for every image.
void Im2Col(const float* image, int64_t channels, const WindowGeometry& g, float* col,
            bool fill_padding);

// Adds the column matrix `col` back onto `image` (each element receives the sum of the column
// entries it was copied to). `image` must be initialized (typically zeroed) by the caller.
// Channels touch disjoint planes, so callers may fold channels in parallel.
void Col2Im(const float* col, int64_t channels, const WindowGeometry& g, float* image);

}  // namespace autodist::ops::nn
