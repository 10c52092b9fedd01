#include "runtime/ops/nn/dropout_draw.h"

#include "runtime/common/error.h"

namespace autodist::ops {
namespace {

float Ratio(const ForwardContext& ctx, bool ratio_from_attribute, float attribute_ratio) {
  if (ratio_from_attribute) return attribute_ratio;
  if (!ctx.has_input(1)) return 0.5F;
  const Tensor& ratio = ctx.input(1);
  AD_CHECK(
      ratio.numel() == 1 && (ratio.dtype() == DType::kFloat32 || ratio.dtype() == DType::kFloat64),
      kInvalidArgument, "{}: ratio must be a float scalar, got {} {}", ctx.Describe(),
      tensor::DTypeName(ratio.dtype()), tensor::ShapeToString(ratio.shape()));
  const auto value = static_cast<float>(ratio.To(tensor::Device::Cpu()).GetAsDouble(0));
  CheckDropoutRatio(value, ctx.Describe());
  return value;
}

}  // namespace

void CheckDropoutRatio(float ratio, const std::string& node) {
  AD_CHECK(ratio >= 0.0F && ratio <= 1.0F, kInvalidArgument, "{}: ratio must be in [0, 1], got {}",
           node, ratio);
}

DropoutDraw DrawDropout(ForwardContext& ctx, bool ratio_from_attribute, float attribute_ratio) {
  const float ratio = Ratio(ctx, ratio_from_attribute, attribute_ratio);
  bool training = ctx.training();
  if (!ratio_from_attribute && ctx.has_input(2)) {
    const Tensor& mode = ctx.input(2);
    AD_CHECK(mode.numel() == 1, kInvalidArgument,
             "{}: training_mode must be a scalar, got shape {}", ctx.Describe(),
             tensor::ShapeToString(mode.shape()));
    training = training && mode.To(tensor::Device::Cpu()).GetAsDouble(0) != 0.0;
  }
  DropoutDraw draw;
  if (!training || ratio == 0.0F) return draw;
  draw.drops = true;
  // One draw per call keeps the engine's sequence independent of the tensor size.
  draw.seed = ctx.rng()();
  draw.threshold =
      static_cast<uint64_t>(static_cast<double>(1.0F - ratio) * static_cast<double>(1 << 24));
  draw.scale = ratio < 1.0F ? 1.0F / (1.0F - ratio) : 0.0F;
  return draw;
}

}  // namespace autodist::ops
