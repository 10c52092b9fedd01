// BatchNormalization over the channel axis of X [N, C, D1..Dn] (opsets 9..17).
//
// Signatures: opsets 14..17 have attribute training_mode and outputs Y, running_mean,
// running_var; opsets 9..13 have no such attribute and mark training by asking for the outputs
// Y, running_mean, running_var, saved_mean, saved_var (PyTorch's exporter emits all five).
//
// Mode: the node normalizes with batch statistics iff the session trains (ctx.training()) and the
// node was exported for training (training_mode = 1; before opset 14: more than one output).
// Otherwise it normalizes with input_mean/input_var — so a model exported in eval mode keeps its
// batch-norm statistics frozen even while the session trains, as ONNX defines.
//
// Training follows PyTorch rather than the ONNX text where they differ: Y uses the biased batch
// variance, but running_var = input_var * momentum + unbiased_var * (1 - momentum) with
// unbiased_var = var * n / (n - 1) (ONNX states the biased one); ONNX momentum is 1 - PyTorch's.
// saved_mean / saved_var (opsets 9..13) are the batch mean and biased batch variance. Outside
// training, running_mean / running_var (and saved_*) are input_mean / input_var unchanged.
//
// Backward: dX, dscale, dB; through batch statistics in training (the full batch-norm gradient,
// including any gradient reaching the statistics outputs), affine otherwise. input_mean and
// input_var are not differentiable. Statistics and sums are vectorized and accumulate blocks in
// double (row_sum.h).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/nn/batch_norm_node.h"
#include "runtime/ops/nn/row_sum.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

struct BatchNormState final : KernelState {
  bool training = false;
  std::vector<float> mean;    // [C]: batch mean in training, input_mean otherwise
  std::vector<float> invstd;  // [C]: 1 / sqrt(var + epsilon)
};

// X viewed as [batch, channels, inner].
struct Layout {
  int64_t batch;
  int64_t channels;
  int64_t inner;
  int64_t count() const { return batch * inner; }
};

// Channels per parallel chunk.
int64_t ChannelGrain(const Layout& l) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, l.count()));
}

class BatchNormalizationKernel final : public OpKernel {
 public:
  explicit BatchNormalizationKernel(const NodeInfo& node)
      : OpKernel(node), attributes_(nn::ParseBatchNorm(node)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Layout l = CheckInputs(ctx);
    auto state = std::make_unique<BatchNormState>();
    state->training = ctx.training() && attributes_.training_form;
    AD_CHECK(!state->training || l.count() > 1, kInvalidArgument,
             "{}: training needs more than one value per channel, X is {}", ctx.Describe(),
             tensor::ShapeToString(x.shape()));
    state->mean.resize(static_cast<size_t>(l.channels));
    state->invstd.resize(static_cast<size_t>(l.channels));
    std::vector<float> batch_var(state->training ? static_cast<size_t>(l.channels) : 0);

    const float* in = x.data<float>();
    const float* scale = ctx.input(1).data<float>();
    const float* bias = ctx.input(2).data<float>();
    const float* input_mean = ctx.input(3).data<float>();
    const float* input_var = ctx.input(4).data<float>();
    Tensor y(DType::kFloat32, x.shape());
    float* out = y.data<float>();
    const int64_t stride = l.channels * l.inner;
    ParallelFor(l.channels, ChannelGrain(l), [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const auto ci = static_cast<size_t>(c);
        double mean = input_mean[c];
        double var = input_var[c];
        if (state->training) {
          double sum = 0.0;
          for (int64_t n = 0; n < l.batch; ++n) {
            const float* row = in + n * stride + c * l.inner;
            sum += nn::RowSum(l.inner, [&](int64_t i) { return row[i]; });
          }
          mean = sum / static_cast<double>(l.count());
          const auto fmean = static_cast<float>(mean);
          double squares = 0.0;
          for (int64_t n = 0; n < l.batch; ++n) {
            const float* row = in + n * stride + c * l.inner;
            squares += nn::RowSum(l.inner, [&](int64_t i) {
              const float d = row[i] - fmean;
              return d * d;
            });
          }
          var = squares / static_cast<double>(l.count());
          batch_var[ci] = static_cast<float>(var);
        }
        const double invstd = 1.0 / std::sqrt(var + static_cast<double>(attributes_.epsilon));
        state->mean[ci] = static_cast<float>(mean);
        state->invstd[ci] = static_cast<float>(invstd);
        // y = (x - mean) * invstd * scale + bias = x * alpha + beta
        const auto alpha = static_cast<float>(invstd * scale[c]);
        const auto beta = static_cast<float>(bias[c] - mean * invstd * scale[c]);
        for (int64_t n = 0; n < l.batch; ++n) {
          const float* row = in + n * stride + c * l.inner;
          float* dst = out + n * stride + c * l.inner;
#pragma omp simd
          for (int64_t i = 0; i < l.inner; ++i) dst[i] = row[i] * alpha + beta;
        }
      }
    });
    ctx.set_output(0, std::move(y));
    SetStatisticsOutputs(ctx, *state, batch_var, l);
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const bool need_dx = ctx.needs_grad(0);
    const bool need_dscale = ctx.needs_grad(1);
    const bool need_dbias = ctx.needs_grad(2);
    if (!need_dx && !need_dscale && !need_dbias) return;
    const auto& state = dynamic_cast<const BatchNormState&>(*ctx.state());
    const Tensor& x = ctx.input(0);
    const Layout l{x.dim(0), x.dim(1), x.numel() / std::max<int64_t>(1, x.dim(0) * x.dim(1))};
    const float* in = x.data<float>();
    const float* scale = ctx.input(1).data<float>();
    const Tensor* dy_tensor = ctx.output_grad(0);
    const float* dy = dy_tensor != nullptr ? dy_tensor->data<float>() : nullptr;
    // Gradients reaching the statistics outputs (only in training do they depend on X).
    const auto stat_grad = [&](size_t output) -> const float* {
      const Tensor* g = state.training ? ctx.output_grad(output) : nullptr;
      return g != nullptr ? g->data<float>() : nullptr;
    };
    const float* d_running_mean = stat_grad(1);
    const float* d_running_var = stat_grad(2);
    const float* d_saved_mean = stat_grad(3);
    const float* d_saved_var = stat_grad(4);

    Tensor dx = need_dx ? Tensor(DType::kFloat32, x.shape()) : Tensor();
    Tensor dscale = need_dscale ? Tensor(DType::kFloat32, {l.channels}) : Tensor();
    Tensor dbias = need_dbias ? Tensor(DType::kFloat32, {l.channels}) : Tensor();
    const int64_t stride = l.channels * l.inner;
    const auto count = static_cast<double>(l.count());
    ParallelFor(l.channels, ChannelGrain(l), [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const auto ci = static_cast<size_t>(c);
        const float mean = state.mean[ci];
        const float invstd = state.invstd[ci];
        double sum_dy = 0.0;
        double sum_dy_xmu = 0.0;  // sum of dy * (x - mean)
        if (dy != nullptr) {
          for (int64_t n = 0; n < l.batch; ++n) {
            const float* row = in + n * stride + c * l.inner;
            const float* g = dy + n * stride + c * l.inner;
            sum_dy += nn::RowSum(l.inner, [&](int64_t i) { return g[i]; });
            sum_dy_xmu += nn::RowSum(l.inner, [&](int64_t i) { return g[i] * (row[i] - mean); });
          }
        }
        if (need_dscale) dscale.data<float>()[c] = static_cast<float>(sum_dy_xmu * invstd);
        if (need_dbias) dbias.data<float>()[c] = static_cast<float>(sum_dy);
        if (!need_dx) continue;
        float* d = dx.data<float>();
        // dx = a * dy + b * (x - mean) + k, per channel constants.
        double a = static_cast<double>(scale[c]) * invstd;
        double b = 0.0;
        double k = 0.0;
        if (state.training) {
          const double momentum_rest = 1.0 - static_cast<double>(attributes_.momentum);
          // a * (dy - mean(dy) - xhat * mean(dy * xhat)), xhat = (x - mean) * invstd
          b = -a * invstd * invstd * sum_dy_xmu / count;
          k = -a * sum_dy / count;
          if (d_running_mean != nullptr) k += momentum_rest * d_running_mean[c] / count;
          if (d_saved_mean != nullptr) k += d_saved_mean[c] / count;
          if (d_running_var != nullptr) b += momentum_rest * d_running_var[c] * 2.0 / (count - 1);
          if (d_saved_var != nullptr) b += d_saved_var[c] * 2.0 / count;
        }
        if (dy == nullptr) a = 0.0;
        const auto fa = static_cast<float>(a);
        const auto fb = static_cast<float>(b);
        const auto fk = static_cast<float>(k - b * mean);  // fold the mean into the constant
        for (int64_t n = 0; n < l.batch; ++n) {
          const float* row = in + n * stride + c * l.inner;
          float* dst = d + n * stride + c * l.inner;
          if (dy != nullptr) {
            const float* g = dy + n * stride + c * l.inner;
#pragma omp simd
            for (int64_t i = 0; i < l.inner; ++i) dst[i] = fa * g[i] + fb * row[i] + fk;
          } else {
#pragma omp simd
            for (int64_t i = 0; i < l.inner; ++i) dst[i] = fb * row[i] + fk;
          }
        }
      }
    });
    if (need_dx) ctx.set_input_grad(0, std::move(dx));
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
  static Layout CheckInputs(const ForwardContext& ctx) {
    nn::CheckBatchNormInputs(ctx, ctx.Describe());
    const Tensor& x = ctx.input(0);
    const int64_t planes = x.dim(0) * x.dim(1);
    return {x.dim(0), x.dim(1), planes == 0 ? 0 : x.numel() / planes};
  }

  void SetStatisticsOutputs(ForwardContext& ctx, const BatchNormState& state,
                            const std::vector<float>& batch_var, const Layout& l) const {
    if (ctx.num_outputs() <= 1) return;
    if (!state.training) {
      for (size_t o = 1; o < ctx.num_outputs(); ++o)
        ctx.set_output(o, ctx.input(o % 2 == 1 ? 3 : 4));
      return;
    }
    const float* input_mean = ctx.input(3).data<float>();
    const float* input_var = ctx.input(4).data<float>();
    const auto count = static_cast<double>(l.count());
    const double rest = 1.0 - static_cast<double>(attributes_.momentum);
    Tensor running_mean(DType::kFloat32, {l.channels});
    Tensor running_var(DType::kFloat32, {l.channels});
    for (int64_t c = 0; c < l.channels; ++c) {
      const auto ci = static_cast<size_t>(c);
      const double unbiased = static_cast<double>(batch_var[ci]) * count / (count - 1.0);
      running_mean.data<float>()[c] = static_cast<float>(
          input_mean[c] * static_cast<double>(attributes_.momentum) + state.mean[ci] * rest);
      running_var.data<float>()[c] = static_cast<float>(
          input_var[c] * static_cast<double>(attributes_.momentum) + unbiased * rest);
    }
    ctx.set_output(1, std::move(running_mean));
    if (ctx.num_outputs() > 2) ctx.set_output(2, std::move(running_var));
    if (ctx.num_outputs() > 3) {
      ctx.set_output(3, Tensor::FromVector<float>({l.channels}, state.mean));
    }
    if (ctx.num_outputs() > 4)
      ctx.set_output(4, Tensor::FromVector<float>({l.channels}, batch_var));
  }

  nn::BatchNormAttributes attributes_;
};

// One class for both signatures: the constructor reads which one from the node's opset.
AUTODIST_REGISTER_KERNEL(BatchNormalization, 9, 17, BatchNormalizationKernel);

}  // namespace
}  // namespace autodist::ops
