#include "runtime/ops/nn/window.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/common/error.h"

namespace autodist::ops::nn {
namespace {

AutoPad ParseAutoPad(const NodeInfo& node) {
  const std::string value = node.GetString("auto_pad", "NOTSET");
  if (value == "NOTSET") return AutoPad::kNotSet;
  if (value == "SAME_UPPER") return AutoPad::kSameUpper;
  if (value == "SAME_LOWER") return AutoPad::kSameLower;
  if (value == "VALID") return AutoPad::kValid;
  Fail(ErrorCode::kInvalidArgument,
       "{}: auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '{}'", node.Describe(),
       value);
}

// Reads an ints attribute that must have `size` values, each at least `minimum`.
std::vector<int64_t> GetSpatialInts(const NodeInfo& node, const std::string& name, size_t size,
                                    int64_t fill, int64_t minimum) {
  std::vector<int64_t> values = node.GetInts(name, std::vector<int64_t>(size, fill));
  AD_CHECK(values.size() == size, kInvalidArgument,
           "{}: attribute '{}' must have {} values for a 2-D window, got [{}]", node.Describe(),
           name, size, fmt::join(values, ", "));
  for (const int64_t v : values) {
    AD_CHECK(v >= minimum, kInvalidArgument, "{}: attribute '{}' values must be >= {}, got [{}]",
             node.Describe(), name, minimum, fmt::join(values, ", "));
  }
  return values;
}

int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

struct AxisWindow {
  int64_t out = 0;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

AxisWindow ResolveAxis(const WindowAttributes& attributes, int64_t in, int64_t kernel,
                       int64_t stride, int64_t dilation, int64_t pad_begin, int64_t pad_end,
                       const char* axis, const std::string& what) {
  const int64_t extent = (kernel - 1) * dilation + 1;
  AxisWindow result;
  switch (attributes.auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      result.out = CeilDiv(in, stride);
      const int64_t total = std::max<int64_t>(0, (result.out - 1) * stride + extent - in);
      const int64_t smaller = total / 2;
      result.pad_begin = attributes.auto_pad == AutoPad::kSameUpper ? smaller : total - smaller;
      result.pad_end = total - result.pad_begin;
      return result;
    }
    case AutoPad::kValid:
      AD_CHECK(in >= extent, kInvalidArgument,
               "{}: input {} {} is smaller than the window extent {} (kernel {}, dilation {})",
               what, axis, in, extent, kernel, dilation);
      result.out = (in - extent) / stride + 1;
      return result;
    case AutoPad::kNotSet:
      break;
  }
  const int64_t span = in + pad_begin + pad_end - extent;
  AD_CHECK(span >= 0, kInvalidArgument,
           "{}: padded input {} {} (+{} +{}) is smaller than the window extent {} (kernel {}, "
           "dilation {})",
           what, axis, in, pad_begin, pad_end, extent, kernel, dilation);
  result.pad_begin = pad_begin;
  result.pad_end = pad_end;
  if (attributes.ceil_mode) {
    result.out = CeilDiv(span, stride) + 1;
    if ((result.out - 1) * stride >= in + pad_begin) --result.out;
  } else {
    result.out = span / stride + 1;
  }
  return result;
}

}  // namespace

WindowAttributes ParseWindowAttributes(const NodeInfo& node, bool kernel_required) {
  WindowAttributes attributes;
  AD_CHECK(!kernel_required || node.HasAttribute("kernel_shape"), kInvalidArgument,
           "{}: attribute 'kernel_shape' is required", node.Describe());
  if (node.HasAttribute("kernel_shape")) {
    attributes.kernel_shape = GetSpatialInts(node, "kernel_shape", 2, 1, 1);
  }
  attributes.strides = GetSpatialInts(node, "strides", 2, 1, 1);
  attributes.dilations = GetSpatialInts(node, "dilations", 2, 1, 1);
  attributes.pads = GetSpatialInts(node, "pads", 4, 0, 0);
  attributes.auto_pad = ParseAutoPad(node);
  attributes.ceil_mode = node.GetInt("ceil_mode", 0) != 0;
  return attributes;
}

WindowGeometry ResolveWindow(const WindowAttributes& attributes, int64_t in_h, int64_t in_w,
                             int64_t kernel_h, int64_t kernel_w, const std::string& what) {
  WindowGeometry g;
  g.in_h = in_h;
  g.in_w = in_w;
  g.kernel_h = kernel_h;
  g.kernel_w = kernel_w;
  g.stride_h = attributes.strides[0];
  g.stride_w = attributes.strides[1];
  g.dilation_h = attributes.dilations[0];
  g.dilation_w = attributes.dilations[1];
  const AxisWindow h = ResolveAxis(attributes, in_h, kernel_h, g.stride_h, g.dilation_h,
                                   attributes.pads[0], attributes.pads[2], "height", what);
  const AxisWindow w = ResolveAxis(attributes, in_w, kernel_w, g.stride_w, g.dilation_w,
                                   attributes.pads[1], attributes.pads[3], "width", what);
  g.out_h = h.out;
  g.out_w = w.out;
  g.pad_top = h.pad_begin;
  g.pad_bottom = h.pad_end;
  g.pad_left = w.pad_begin;
  g.pad_right = w.pad_end;
  return g;
}

}  // namespace autodist::ops::nn
