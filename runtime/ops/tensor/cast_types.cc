#include "runtime/ops/tensor/cast_types.h"

namespace autodist::ops {

tensor::DType CastTarget(int64_t to, bool present, const std::string& node) {
  AD_CHECK(present, kInvalidArgument, "{}: attribute 'to' is required", node);
  AD_CHECK(to == static_cast<int32_t>(to), kInvalidArgument,
           "{}: attribute 'to' is {}, not an ONNX data type", node, to);
  return tensor::DTypeFromOnnx(static_cast<int32_t>(to), node + ": attribute 'to'");
}

}  // namespace autodist::ops
