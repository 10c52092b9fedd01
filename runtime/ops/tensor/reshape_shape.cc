#include "runtime/ops/tensor/reshape_shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/common/error.h"

namespace autodist::ops {

tensor::Shape ResolveReshape(const std::vector<int64_t>& requested, const tensor::Shape& input,
                             bool allow_zero, const std::string& what) {
  tensor::Shape shape(requested.begin(), requested.end());
  int64_t infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      AD_CHECK(infer < 0, kInvalidArgument, "{}: shape [{}] has more than one -1", what,
               fmt::join(requested, ", "));
      infer = static_cast<int64_t>(i);
      continue;
    }
    AD_CHECK(shape[i] >= 0, kInvalidArgument, "{}: shape [{}] has a negative dimension {}", what,
             fmt::join(requested, ", "), shape[i]);
    if (shape[i] == 0 && !allow_zero) {
      AD_CHECK(i < input.size(), kInvalidArgument,
               "{}: shape [{}] copies dimension {} (a 0) of an input of rank {}", what,
               fmt::join(requested, ", "), i, input.size());
      shape[i] = input[i];
    }
    known *= shape[i];
  }
  if (infer >= 0) {
    // With a zero-sized axis any value would do for -1; ONNX and PyTorch reject that.
    AD_CHECK(known != 0 && tensor::NumElements(input) % known == 0, kInvalidArgument,
             "{}: cannot infer the -1 in shape [{}] for an input of shape {}", what,
             fmt::join(requested, ", "), tensor::ShapeToString(input));
    shape[static_cast<size_t>(infer)] = tensor::NumElements(input) / known;
  }
  AD_CHECK(tensor::NumElements(shape) == tensor::NumElements(input), kInvalidArgument,
           "{}: cannot reshape {} ({} elements) to [{}] (resolved to {})", what,
           tensor::ShapeToString(input), tensor::NumElements(input), fmt::join(requested, ", "),
           tensor::ShapeToString(shape));
  return shape;
}

}  // namespace autodist::ops
