// BatchNormalization on CUDA (opsets 9..17): the CPU kernel's semantics, signatures and mode
// (runtime/ops/nn/batch_normalization.cc: batch statistics iff the session trains and the node
// was exported for training; PyTorch's unbiased running variance), float32 on the device.
// Training: per-channel sums of X, then of (X - mean)², in double (channel_sums.cu), then the
// per-channel constants and y = x alpha + beta. Backward: Σ dY and Σ dY (X - mean) in one pass,
// then dx = a dy + b x + k, with the gradients reaching the statistics outputs folded into b, k.
#include <memory>
#include <utility>

#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/nn/batch_norm_node.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using detail::ChannelLayout;
using detail::ChannelSum;
using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

struct CudaBatchNormState final : ops::KernelState {
  bool training = false;
  Tensor mean;    // [C]: batch mean in training, input_mean otherwise
  Tensor invstd;  // [C]
};

ChannelLayout LayoutOf(const Tensor& x) {
  const int64_t planes = x.dim(0) * x.dim(1);
  return {x.dim(0), x.dim(1), planes == 0 ? 0 : x.numel() / planes};
}

class CudaBatchNormalizationKernel final : public ops::OpKernel {
 public:
  explicit CudaBatchNormalizationKernel(const ops::NodeInfo& node)
      : OpKernel(node), attributes_(ops::nn::ParseBatchNorm(node)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    ops::nn::CheckBatchNormInputs(ctx, node);
    for (size_t i = 1; i < 5; ++i) detail::StreamOf(node, ctx.input(i));
    const ChannelLayout l = LayoutOf(x);
    const int64_t channels = l.channels;
    auto state = std::make_unique<CudaBatchNormState>();
    state->training = ctx.training() && attributes_.training_form;
    AD_CHECK(!state->training || l.count() > 1, kInvalidArgument,
             "{}: training needs more than one value per channel, X is {}", node,
             tensor::ShapeToString(x.shape()));
    const tensor::Device device = x.device();
    state->mean = Tensor(DType::kFloat32, {channels}, device);
    state->invstd = Tensor(DType::kFloat32, {channels}, device);
    Tensor constants(DType::kFloat32, {2 * channels}, device);  // alpha, beta

    detail::BatchNormStatistics statistics{.scale = ctx.input(1).device_data<float>(),
                                           .bias = ctx.input(2).device_data<float>(),
                                           .input_mean = ctx.input(3).device_data<float>(),
                                           .input_var = ctx.input(4).device_data<float>(),
                                           .channels = channels,
                                           .count = l.count(),
                                           .epsilon = attributes_.epsilon,
                                           .momentum = attributes_.momentum,
                                           .mean = state->mean.device_data<float>(),
                                           .invstd = state->invstd.device_data<float>(),
                                           .alpha = constants.device_data<float>(),
                                           .beta = constants.device_data<float>() + channels};
    Tensor sums;
    Tensor running_mean;
    Tensor running_var;
    Tensor batch_var;
    if (state->training) {
      Tensor scratch(DType::kFloat64, {detail::ChannelSumScratch(l, node)}, device);
      sums = Tensor(DType::kFloat64, {2 * channels}, device);  // Σ x, Σ (x - mean)²
      auto* sum = sums.device_data<double>();
      detail::LaunchChannelSums(ChannelSum::kValues, x.device_data<float>(), nullptr, nullptr, l,
                                scratch.device_data<double>(), sum, stream);
      detail::LaunchBatchMean(sum, channels, l.count(), state->mean.device_data<float>(), stream);
      detail::LaunchChannelSums(ChannelSum::kSquaredDeviation, x.device_data<float>(), nullptr,
                                state->mean.device_data<float>(), l, scratch.device_data<double>(),
                                sum + channels, stream);
      statistics.sums = sum;
      statistics.squares = sum + channels;
      if (ctx.num_outputs() > 1) {
        running_mean = Tensor(DType::kFloat32, {channels}, device);
        running_var = Tensor(DType::kFloat32, {channels}, device);
        batch_var = Tensor(DType::kFloat32, {channels}, device);
        statistics.running_mean = running_mean.device_data<float>();
        statistics.running_var = running_var.device_data<float>();
        statistics.batch_var = batch_var.device_data<float>();
      }
    }
    detail::LaunchBatchNormStatistics(statistics, stream);
    Tensor y(DType::kFloat32, x.shape(), device);
    detail::LaunchChannelAffine(x.device_data<float>(), statistics.alpha, statistics.beta, l,
                                y.device_data<float>(), stream);
    ctx.set_output(0, std::move(y));
    if (ctx.num_outputs() > 1) {
      if (!state->training) {
        for (size_t o = 1; o < ctx.num_outputs(); ++o) {
          ctx.set_output(o, ctx.input(o % 2 == 1 ? 3 : 4));
        }
      } else {
        ctx.set_output(1, std::move(running_mean));
        if (ctx.num_outputs() > 2) ctx.set_output(2, std::move(running_var));
        if (ctx.num_outputs() > 3) ctx.set_output(3, state->mean.Clone());
        if (ctx.num_outputs() > 4) ctx.set_output(4, std::move(batch_var));
      }
    }
    ctx.save_state(std::move(state));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const bool need_dx = ctx.needs_grad(0);
    const bool need_dscale = ctx.needs_grad(1);
    const bool need_dbias = ctx.needs_grad(2);
    if (!need_dx && !need_dscale && !need_dbias) return;
    const std::string& node = description();
    const auto* state = &ops::SavedState<CudaBatchNormState>(ctx);
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    const ChannelLayout l = LayoutOf(x);
    const tensor::Device device = x.device();
    const Tensor* dy = ctx.output_grad(0);
    // Gradients reaching the statistics outputs (only in training do they depend on X).
    const auto stat_grad = [&](size_t output) -> const float* {
      const Tensor* g = state->training ? ctx.output_grad(output) : nullptr;
      return g != nullptr ? g->device_data<float>() : nullptr;
    };

    Tensor moments;
    if (dy != nullptr) {
      Tensor scratch(DType::kFloat64, {detail::ChannelSumScratch(l, node)}, device);
      moments = Tensor(DType::kFloat64, {2 * l.channels}, device);
      detail::LaunchChannelSums(ChannelSum::kGradientMoments, dy->device_data<float>(),
                                x.device_data<float>(), state->mean.device_data<float>(), l,
                                scratch.device_data<double>(), moments.device_data<double>(),
                                stream);
    }
    Tensor dscale = need_dscale ? Tensor(DType::kFloat32, {l.channels}, device) : Tensor();
    Tensor dbias = need_dbias ? Tensor(DType::kFloat32, {l.channels}, device) : Tensor();
    Tensor coefficients(DType::kFloat32, {3 * l.channels}, device);
    detail::LaunchBatchNormGradient(
        detail::BatchNormGradient{
            .moments = dy != nullptr ? moments.device_data<double>() : nullptr,
            .scale = ctx.input(1).device_data<float>(),
            .mean = state->mean.device_data<float>(),
            .invstd = state->invstd.device_data<float>(),
            .d_running_mean = stat_grad(1),
            .d_running_var = stat_grad(2),
            .d_saved_mean = stat_grad(3),
            .d_saved_var = stat_grad(4),
            .training = state->training,
            .channels = l.channels,
            .count = l.count(),
            .momentum = attributes_.momentum,
            .dscale = need_dscale ? dscale.device_data<float>() : nullptr,
            .dbias = need_dbias ? dbias.device_data<float>() : nullptr,
            .coefficients = coefficients.device_data<float>()},
        stream);
    if (need_dx) {
      Tensor dx(DType::kFloat32, x.shape(), device);
      detail::LaunchBatchNormInputGradient(
          dy != nullptr ? dy->device_data<float>() : nullptr, x.device_data<float>(),
          coefficients.device_data<float>(), l, dx.device_data<float>(), stream);
      ctx.set_input_grad(0, std::move(dx));
    }
    if (need_dscale) ctx.set_input_grad(1, std::move(dscale));
    if (need_dbias) ctx.set_input_grad(2, std::move(dbias));
  }

  bool IsDifferentiable(size_t input) const override { return input <= 2; }
  // X and scale; the statistics are kept in the state.
  bool BackwardNeedsInput(size_t input) const override { return input <= 1; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
  // running_mean -> input_mean, running_var -> input_var.
  std::vector<std::pair<size_t, size_t>> StateUpdates() const override { return {{1, 3}, {2, 4}}; }

 private:
  ops::nn::BatchNormAttributes attributes_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(BatchNormalization, 9, 17, CudaBatchNormalizationKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
