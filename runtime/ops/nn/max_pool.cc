// MaxPool, 2-D (opsets 1..17): X [N, C, H, W] -> Y [N, C, outH, outW], the maximum of each
// window (kernel_shape, strides, dilations, pads or auto_pad, ceil_mode; padding never wins).
// Optional output Indices (int64): the flat index of each maximum in X as ONNX defines it,
// ((n * C + c) * H + h) * W + w, or with storage_order = 1 (column-major) (n * C + c) * H * W +
// w * H + h. As in PyTorch, the first maximum in row-major window order wins ties, a NaN wins
// over numbers (and a later NaN over an earlier one), and backward routes each output's gradient
// to its argmax. A window lying wholly in the padding gives -inf, index -1 and no gradient.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/ops/nn/pool.h"
#include "runtime/ops/nn/window.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

using nn::WindowGeometry;
using nn::WindowTaps;

struct MaxPoolState final : KernelState {
  Shape input_shape;
  Tensor argmax;  // int32 [N, C, outH, outW]: index within the input plane, -1 for none
};

void MaxPoolPlane(const float* plane, const WindowGeometry& g, float* out, int32_t* argmax) {
  nn::ForEachWindow(g, [&](int64_t o, const WindowTaps& rows, const WindowTaps& cols) {
    const nn::WindowMax best = nn::MaxOfWindow(plane, g, rows, cols);
    out[o] = best.value;
    argmax[o] = static_cast<int32_t>(best.index);
  });
}

class MaxPoolKernel final : public OpKernel {
 public:
  explicit MaxPoolKernel(const NodeInfo& node)
      : OpKernel(node),
        attributes_(nn::ParseWindowAttributes(node, /*kernel_required=*/true)),
        column_major_(node.GetInt("storage_order", 0) != 0) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const WindowGeometry g = nn::ResolvePoolInput(attributes_, x, ctx.Describe());
    AD_CHECK(g.in_size() <= std::numeric_limits<int32_t>::max(), kInvalidArgument,
             "{}: input planes of {} elements are too large", ctx.Describe(), g.in_size());
    const Shape out_shape{x.dim(0), x.dim(1), g.out_h, g.out_w};
    Tensor y(DType::kFloat32, out_shape);
    auto state = std::make_unique<MaxPoolState>();
    state->input_shape = x.shape();
    state->argmax = Tensor(DType::kInt32, out_shape);
    const float* in = x.data<float>();
    float* out = y.data<float>();
    int32_t* argmax = state->argmax.data<int32_t>();
    nn::ForEachPlane(x.dim(0) * x.dim(1), g, [&](int64_t p) {
      MaxPoolPlane(in + p * g.in_size(), g, out + p * g.out_size(), argmax + p * g.out_size());
    });
    ctx.set_output(0, std::move(y));
    if (ctx.num_outputs() > 1) ctx.set_output(1, FlatIndices(*state, g));
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const auto& state = SavedState<MaxPoolState>(ctx);
    Tensor dx = Tensor::Zeros(DType::kFloat32, state.input_shape);
    const int64_t planes = state.input_shape[0] * state.input_shape[1];
    const int64_t in_size = state.input_shape[2] * state.input_shape[3];
    const int64_t out_size = dy->numel() / std::max<int64_t>(1, planes);
    const float* grad = dy->data<float>();
    const int32_t* argmax = state.argmax.data<int32_t>();
    float* d = dx.data<float>();
    ParallelFor(planes, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, out_size)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t p = begin; p < end; ++p) {
                    float* plane = d + p * in_size;
                    for (int64_t o = p * out_size; o < (p + 1) * out_size; ++o) {
                      if (argmax[o] >= 0) plane[argmax[o]] += grad[o];
                    }
                  }
                });
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  Tensor FlatIndices(const MaxPoolState& state, const WindowGeometry& g) const {
    Tensor indices(DType::kInt64, state.argmax.shape());
    const int32_t* argmax = state.argmax.data<int32_t>();
    int64_t* out = indices.data<int64_t>();
    const int64_t out_size = g.out_size();
    for (int64_t i = 0; i < indices.numel(); ++i) {
      const int64_t local = argmax[i];
      if (local < 0) {
        out[i] = -1;
        continue;
      }
      const int64_t plane_offset = (i / out_size) * g.in_size();
      out[i] = plane_offset + (column_major_ ? (local % g.in_w) * g.in_h + local / g.in_w : local);
    }
    return indices;
  }

  nn::WindowAttributes attributes_;
  bool column_major_;
};

AUTODIST_REGISTER_KERNEL(MaxPool, 1, 17, MaxPoolKernel);

}  // namespace
}  // namespace autodist::ops
