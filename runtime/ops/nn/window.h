// Geometry of a 2-D sliding window, shared by Conv, MaxPool and AveragePool: the ONNX attributes
// (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode) parsed once, and resolved against
// an input's height and width into the padding actually applied and the output size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ops/nn/window_geometry.h"
#include "runtime/ops/node_info.h"

namespace autodist::ops::nn {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// The attributes as the node states them; checked for arity and sign in ParseWindowAttributes.
struct WindowAttributes {
  std::vector<int64_t> kernel_shape;  // [kH, kW]; empty when absent (Conv reads it from W)
  std::vector<int64_t> strides;       // [sH, sW]
  std::vector<int64_t> dilations;     // [dH, dW]
  std::vector<int64_t> pads;          // [top, left, bottom, right]
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
};

// Parses and validates the window attributes of a 2-D Conv or pooling node. `kernel_required`:
// pooling nodes must state kernel_shape; Conv may leave it to the weight's shape.
WindowAttributes ParseWindowAttributes(const NodeInfo& node, bool kernel_required);

// Resolves `attributes` for an input of in_h x in_w and a kernel of kernel_h x kernel_w.
// Output size: floor((in + pads - extent) / stride) + 1 with extent = (k - 1) * dilation + 1;
// with ceil_mode, ceil instead, dropping a last window that would start inside the end padding
// (PyTorch's rule, so that every window sees at least one input element). SAME_UPPER/SAME_LOWER
// give ceil(in / stride) with the odd pad at the end / the beginning; VALID pads nothing.
// Throws InvalidArgument naming `what` when the input is smaller than the window.
WindowGeometry ResolveWindow(const WindowAttributes& attributes, int64_t in_h, int64_t in_w,
                             int64_t kernel_h, int64_t kernel_w, const std::string& what);

}  // namespace autodist::ops::nn
