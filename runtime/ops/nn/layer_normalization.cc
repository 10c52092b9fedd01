// LayerNormalization (opset 17): X normalized over the axes [axis, rank) (axis default -1),
// Y = (X - mean) / sqrt(var + epsilon) * Scale + B with the biased variance; Scale and the
// optional B broadcast against the normalized shape X.shape[axis:]. Optional outputs Mean and
// InvStdDev have shape [d0, .., d(axis-1), 1, .., 1]. Only stash_type 1 (float) is supported, the
// one type float32 inputs compute in. Row statistics are vectorized, accumulating blocks in
// double (row_sum.h). Backward gives dX (also through gradients reaching Mean and InvStdDev),
// dScale and dB.
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/nn/layer_norm_layout.h"
#include "runtime/ops/nn/row_sum.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::ops {
namespace {

struct LayerNormState final : KernelState {
  std::vector<float> mean;    // [rows]
  std::vector<float> invstd;  // [rows]
};

using Layout = nn::LayerNormLayout;

int64_t RowGrain(int64_t size) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, size));
}

class LayerNormalizationKernel final : public OpKernel {
 public:
  explicit LayerNormalizationKernel(const NodeInfo& node)
      : OpKernel(node), attributes_(nn::ParseLayerNorm(node)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.dtype() == DType::kFloat32, kInvalidArgument, "{}: X must be float32, got {}",
             ctx.Describe(), tensor::DTypeName(x.dtype()));
    const Layout l = Resolve(x.shape(), ctx.Describe());
    const std::vector<float> scale = Expand(ctx.input(1), l, "Scale", ctx.Describe());
    const std::vector<float> bias = ctx.has_input(2)
                                        ? Expand(ctx.input(2), l, "B", ctx.Describe())
                                        : std::vector<float>(static_cast<size_t>(l.size), 0.0F);
    auto state = std::make_unique<LayerNormState>();
    state->mean.resize(static_cast<size_t>(l.rows));
    state->invstd.resize(static_cast<size_t>(l.rows));
    Tensor y(DType::kFloat32, x.shape());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    const float* s = scale.data();
    const float* b = bias.data();
    ParallelFor(l.rows, RowGrain(l.size), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* row = in + r * l.size;
        const double sum = nn::RowSum(l.size, [&](int64_t i) { return row[i]; });
        const auto fmean = static_cast<float>(l.size > 0 ? sum / static_cast<double>(l.size) : 0.0);
        const double squares = nn::RowSum(l.size, [&](int64_t i) {
          const float d = row[i] - fmean;
          return d * d;
        });
        const double var = l.size > 0 ? squares / static_cast<double>(l.size) : 0.0;
        const auto invstd = static_cast<float>(1.0 / std::sqrt(var + attributes_.epsilon));
        state->mean[static_cast<size_t>(r)] = fmean;
        state->invstd[static_cast<size_t>(r)] = invstd;
        float* dst = out + r * l.size;
#pragma omp simd
        for (int64_t i = 0; i < l.size; ++i) dst[i] = (row[i] - fmean) * invstd * s[i] + b[i];
      }
    });
    ctx.set_output(0, std::move(y));
    if (ctx.num_outputs() > 1)
      ctx.set_output(1, Tensor::FromVector<float>(l.stats_shape, state->mean));
    if (ctx.num_outputs() > 2) {
      ctx.set_output(2, Tensor::FromVector<float>(l.stats_shape, state->invstd));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const auto& state = dynamic_cast<const LayerNormState&>(*ctx.state());
    const Tensor& x = ctx.input(0);
    const Layout l = Resolve(x.shape(), ctx.Describe());
    const Tensor* dy_tensor = ctx.output_grad(0);
    const float* dy = dy_tensor != nullptr ? dy_tensor->data<float>() : nullptr;
    const float* d_mean =
        ctx.output_grad(1) != nullptr ? ctx.output_grad(1)->data<float>() : nullptr;
    const float* d_invstd =
        ctx.output_grad(2) != nullptr ? ctx.output_grad(2)->data<float>() : nullptr;
    const float* in = x.data<float>();
    const float* mean = state.mean.data();
    const float* invstd = state.invstd.data();
    const auto size = static_cast<double>(l.size);

    if (ctx.needs_grad(0)) {
      const std::vector<float> scale = Expand(ctx.input(1), l, "Scale", ctx.Describe());
      const float* s = scale.data();
      Tensor dx(DType::kFloat32, x.shape());
      float* d = dx.data<float>();
      ParallelFor(l.rows, RowGrain(l.size), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float* row = in + r * l.size;
          const float* g = dy != nullptr ? dy + r * l.size : nullptr;
          const float m = mean[r];
          const float inv = invstd[r];
          // dx = inv * (gs - mean(gs) - xhat * mean(gs * xhat)), gs = dy * scale, plus the
          // gradients reaching Mean (spread evenly) and InvStdDev (-inv^2 * xhat / size each).
          double sum_gs = 0.0;
          double sum_gs_xhat = 0.0;
          if (g != nullptr) {
            sum_gs = nn::RowSum(l.size, [&](int64_t i) { return g[i] * s[i]; });
            sum_gs_xhat =
                nn::RowSum(l.size, [&](int64_t i) { return g[i] * s[i] * (row[i] - m) * inv; });
          }
          const auto c0 = static_cast<float>(-inv * sum_gs / size +
                                             (d_mean != nullptr ? d_mean[r] / size : 0.0));
          const auto c1 = static_cast<float>(
              -inv * sum_gs_xhat / size -
              (d_invstd != nullptr ? static_cast<double>(d_invstd[r]) * inv * inv / size : 0.0));
          float* dst = d + r * l.size;
          if (g != nullptr) {
#pragma omp simd
            for (int64_t i = 0; i < l.size; ++i) {
              dst[i] = inv * g[i] * s[i] + c0 + c1 * (row[i] - m) * inv;
            }
          } else {
#pragma omp simd
            for (int64_t i = 0; i < l.size; ++i) dst[i] = c0 + c1 * (row[i] - m) * inv;
          }
        }
      });
      ctx.set_input_grad(0, std::move(dx));
    }

    const bool need_dscale = ctx.needs_grad(1);
    const bool need_dbias = ctx.has_input(2) && ctx.needs_grad(2);
    if (!need_dscale && !need_dbias) return;
    // Column sums over rows: each chunk of columns walks every row, so no partials to merge.
    std::vector<double> dscale(static_cast<size_t>(l.size), 0.0);
    std::vector<double> dbias(static_cast<size_t>(l.size), 0.0);
    if (dy != nullptr) {
      ParallelFor(l.size, std::max<int64_t>(64, RowGrain(l.rows)), [&](int64_t begin, int64_t end) {
        for (int64_t r = 0; r < l.rows; ++r) {
          const float* row = in + r * l.size;
          const float* g = dy + r * l.size;
          const float m = mean[r];
          const float inv = invstd[r];
          double* ds = dscale.data();
          double* db = dbias.data();
#pragma omp simd
          for (int64_t i = begin; i < end; ++i) {
            ds[i] += static_cast<double>(g[i] * (row[i] - m) * inv);
            db[i] += static_cast<double>(g[i]);
          }
        }
      });
    }
    if (need_dscale) ctx.set_input_grad(1, Reduce(dscale, l, ctx.input(1).shape()));
    if (need_dbias) ctx.set_input_grad(2, Reduce(dbias, l, ctx.input(2).shape()));
  }

  // X, Scale (B's gradient needs only dY).
  bool BackwardNeedsInput(size_t input) const override { return input <= 1; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  Layout Resolve(const Shape& shape, const std::string& what) const {
    return nn::ResolveLayerNorm(attributes_.axis, shape, what);
  }

  // `t` (Scale or B) broadcast to the normalized shape, flattened.
  static std::vector<float> Expand(const Tensor& t, const Layout& l, const char* name,
                                   const std::string& what) {
    nn::CheckLayerNormOperand(t, l, name, what);
    std::vector<float> out(static_cast<size_t>(l.size));
    const float* src = t.data<float>();
    if (t.numel() == l.size) {
      std::copy(src, src + l.size, out.begin());
      return out;
    }
    const std::vector<int64_t> strides = tensor::BroadcastStrides(t.shape(), l.normalized);
    const std::vector<int64_t> none(l.normalized.size(), 0);
    tensor::ForEachBroadcast(l.normalized, strides, none, [&](int64_t o, int64_t si, int64_t) {
      out[static_cast<size_t>(o)] = src[si];
    });
    return out;
  }

  // A gradient over the normalized shape summed down to `target` (Scale's or B's shape).
  static Tensor Reduce(const std::vector<double>& values, const Layout& l, const Shape& target) {
    Tensor full(DType::kFloat32, l.normalized);
    float* data = full.data<float>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<float>(values[i]);
    return tensor::ReduceToShape(full, target).Reshaped(target);
  }

  nn::LayerNormAttributes attributes_;
};

AUTODIST_REGISTER_KERNEL(LayerNormalization, 17, 17, LayerNormalizationKernel);

}  // namespace
}  // namespace autodist::ops
