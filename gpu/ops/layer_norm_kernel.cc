// LayerNormalization on CUDA (opset 17): the CPU kernel's semantics and checks
// (runtime/ops/nn/layer_normalization.cc, layer_norm_layout.h), float32: Y and the optional Mean
// and InvStdDev outputs; backward dX (with the gradients reaching Mean and InvStdDev), dScale
// and dB. Scale and B that broadcast to the normalized shape are expanded to it first, and their
// gradients summed back to their shapes.
#include <memory>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/nn/layer_norm_layout.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using ops::nn::LayerNormLayout;
using tensor::DType;
using tensor::Tensor;

struct CudaLayerNormState final : ops::KernelState {
  Tensor mean;    // [rows] on the device
  Tensor invstd;  // [rows]
};

// `t` (Scale or B) over the whole normalized shape, flattened to [size].
Tensor Expand(const Tensor& t, const LayerNormLayout& l, const std::string& node,
              cudaStream_t stream) {
  if (t.numel() == l.size) return t.Reshaped({l.size});
  Tensor out(DType::kFloat32, {l.size}, t.device());
  detail::LaunchBroadcastBinary<detail::SecondOfTwo>(
      out.device_data<float>(), t.device_data<float>(), out.device_data<float>(),
      detail::PlanBroadcast(l.normalized, t.shape(), l.normalized, node), stream);
  return out;
}

// A gradient over the normalized shape ([size]) summed down to `target`'s shape.
Tensor ReduceTo(const Tensor& full, const LayerNormLayout& l, const Tensor& target,
                const std::string& node, cudaStream_t stream) {
  if (target.numel() == l.size) return full.Reshaped(target.shape());
  Tensor out(DType::kFloat32, target.shape(), full.device());
  detail::LaunchSumToShape(full.device_data<float>(), out.device_data<float>(),
                           detail::PlanSumToShape(l.normalized, target.shape(), node), stream);
  return out;
}

class CudaLayerNormalizationKernel final : public ops::OpKernel {
 public:
  explicit CudaLayerNormalizationKernel(const ops::NodeInfo& node)
      : OpKernel(node), attributes_(ops::nn::ParseLayerNorm(node)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    detail::RequireFloat32(node, x, "X");
    const LayerNormLayout l = ops::nn::ResolveLayerNorm(attributes_.axis, x.shape(), node);
    const Tensor& scale_input = ctx.input(1);
    detail::StreamOf(node, scale_input);
    ops::nn::CheckLayerNormOperand(scale_input, l, "Scale", node);
    const Tensor scale = Expand(scale_input, l, node, stream);
    Tensor bias;
    if (ctx.has_input(2)) {
      detail::StreamOf(node, ctx.input(2));
      ops::nn::CheckLayerNormOperand(ctx.input(2), l, "B", node);
      bias = Expand(ctx.input(2), l, node, stream);
    } else {
      bias = Tensor(DType::kFloat32, {l.size}, x.device());
      bias.SetZero();
    }
    auto state = std::make_unique<CudaLayerNormState>();
    state->mean = Tensor(DType::kFloat32, {l.rows}, x.device());
    state->invstd = Tensor(DType::kFloat32, {l.rows}, x.device());
    Tensor y(DType::kFloat32, x.shape(), x.device());
    detail::LaunchLayerNormForward(x.device_data<float>(), scale.device_data<float>(),
                                   bias.device_data<float>(), l.rows, l.size, attributes_.epsilon,
                                   y.device_data<float>(), state->mean.device_data<float>(),
                                   state->invstd.device_data<float>(), stream);
    ctx.set_output(0, std::move(y));
    if (ctx.num_outputs() > 1) ctx.set_output(1, state->mean.Reshaped(l.stats_shape));
    if (ctx.num_outputs() > 2) ctx.set_output(2, state->invstd.Reshaped(l.stats_shape));
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const std::string& node = description();
    const auto* state = &ops::SavedState<CudaLayerNormState>(ctx);
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    const LayerNormLayout l = ops::nn::ResolveLayerNorm(attributes_.axis, x.shape(), node);
    const Tensor* dy = ctx.output_grad(0);
    const auto pointer = [](const Tensor* t) {
      return t != nullptr ? t->device_data<float>() : nullptr;
    };
    if (ctx.needs_grad(0)) {
      const Tensor scale = Expand(ctx.input(1), l, node, stream);
      Tensor dx(DType::kFloat32, x.shape(), x.device());
      detail::LaunchLayerNormInputGrad(pointer(dy), x.device_data<float>(),
                                       scale.device_data<float>(), state->mean.device_data<float>(),
                                       state->invstd.device_data<float>(),
                                       pointer(ctx.output_grad(1)), pointer(ctx.output_grad(2)),
                                       l.rows, l.size, dx.device_data<float>(), stream);
      ctx.set_input_grad(0, std::move(dx));
    }
    const bool need_dscale = ctx.needs_grad(1);
    const bool need_dbias = ctx.has_input(2) && ctx.needs_grad(2);
    if (!need_dscale && !need_dbias) return;
    Tensor dscale(DType::kFloat32, {l.size}, x.device());
    Tensor dbias(DType::kFloat32, {l.size}, x.device());
    if (dy == nullptr) {
      dscale.SetZero();
      dbias.SetZero();
    } else {
      Tensor scratch(DType::kFloat64, {2 * detail::LayerNormColumnSlices(l.rows) * l.size},
                     x.device());
      detail::LaunchLayerNormParamGrads(
          dy->device_data<float>(), x.device_data<float>(), state->mean.device_data<float>(),
          state->invstd.device_data<float>(), l.rows, l.size, scratch.device_data<double>(),
          dscale.device_data<float>(), dbias.device_data<float>(), stream);
    }
    if (need_dscale) ctx.set_input_grad(1, ReduceTo(dscale, l, ctx.input(1), node, stream));
    if (need_dbias) ctx.set_input_grad(2, ReduceTo(dbias, l, ctx.input(2), node, stream));
  }

  // X, Scale (B's gradient needs only dY).
  bool BackwardNeedsInput(size_t input) const override { return input <= 1; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  ops::nn::LayerNormAttributes attributes_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(LayerNormalization, 17, 17, CudaLayerNormalizationKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
