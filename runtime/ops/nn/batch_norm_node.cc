#include "runtime/ops/nn/batch_norm_node.h"

#include <array>

#include "runtime/common/error.h"

namespace autodist::ops::nn {

BatchNormAttributes ParseBatchNorm(const NodeInfo& node) {
  const size_t most_outputs = node.opset() >= 14 ? 3U : 5U;
  AD_CHECK(node.num_outputs() <= most_outputs, kInvalidArgument,
           "{}: BatchNormalization has at most {} outputs in this opset, the node has {}",
           node.Describe(), most_outputs, node.num_outputs());
  return {node.GetFloat("epsilon", 1e-5F), node.GetFloat("momentum", 0.9F),
          node.opset() >= 14 ? node.GetInt("training_mode", 0) != 0 : node.num_outputs() > 1};
}

void CheckBatchNormInputs(const ForwardContext& ctx, const std::string& what) {
  const tensor::Tensor& x = ctx.input(0);
  AD_CHECK(x.rank() >= 2 && x.dtype() == tensor::DType::kFloat32, kInvalidArgument,
           "{}: X must be float32 [N, C, ...], got {} {}", what, tensor::DTypeName(x.dtype()),
           tensor::ShapeToString(x.shape()));
  const int64_t channels = x.dim(1);
  static constexpr std::array<const char*, 5> kNames = {"X", "scale", "B", "input_mean",
                                                        "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    const tensor::Tensor& t = ctx.input(i);
    AD_CHECK(t.dtype() == tensor::DType::kFloat32 && t.shape() == tensor::Shape{channels},
             kInvalidArgument, "{}: {} must be float32 [{}] (one per channel of X {}), got {} {}",
             what, kNames[i], channels, tensor::ShapeToString(x.shape()),
             tensor::DTypeName(t.dtype()), tensor::ShapeToString(t.shape()));
  }
}

}  // namespace autodist::ops::nn
