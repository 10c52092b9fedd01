// Dropout (opsets 12..17: inputs data, optional ratio, optional training_mode; opsets 10..11:
// attribute ratio) with outputs output and optional mask (bool).
//
// Mode: drops when the session trains (ctx.training()) and the training_mode input, when given,
// is true. ONNX reads an absent training_mode as false; we read it as "follow the session", so
// a graph that leaves it out still trains with dropout (PyTorch's exporter always states it).
// Training: each element is kept with probability 1 - ratio and output = data * mask /
// (1 - ratio), as PyTorch does; ratio 1 drops everything. Otherwise output = data (shared) and
// the mask is all true. The `seed` attribute is ignored: the mask is a pure function of one
// draw from the session's random engine and the element index (dropout_mask.h, counter-based,
// so it depends on neither the thread count nor the device), reproducible from the engine's
// state; dropout_draw.h decides, shared with the CUDA kernel. Backward applies the same mask and
// scale, kept from forward.
#include <algorithm>
#include <cstdint>

#include "runtime/common/error.h"
#include "runtime/ops/nn/dropout_draw.h"
#include "runtime/ops/nn/dropout_mask.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

struct DropoutState final : KernelState {
  Tensor mask;  // bool, same shape as data; undefined when nothing was dropped
  float scale = 1.0F;
};

class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(const NodeInfo& node)
      : OpKernel(node),
        ratio_from_attribute_(node.opset() < 12),
        attribute_ratio_(node.GetFloat("ratio", 0.5F)) {
    if (ratio_from_attribute_) CheckDropoutRatio(attribute_ratio_, node.Describe());
  }

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.dtype() == DType::kFloat32, kInvalidArgument, "{}: data must be float32, got {}",
             ctx.Describe(), tensor::DTypeName(x.dtype()));
    const DropoutDraw draw = DrawDropout(ctx, ratio_from_attribute_, attribute_ratio_);
    auto state = std::make_unique<DropoutState>();
    if (!draw.drops) {
      ctx.set_output(0, x);
      if (ctx.num_outputs() > 1) ctx.set_output(1, AllTrue(x.shape()));
      ctx.save_state(std::move(state));
      return;
    }
    state->scale = draw.scale;
    state->mask = Tensor(DType::kBool, x.shape());
    Tensor y(DType::kFloat32, x.shape());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    bool* mask = state->mask.data<bool>();
    const float scale = state->scale;
    ParallelFor(x.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const bool keep = DropoutKeeps(draw.seed, static_cast<uint64_t>(i), draw.threshold);
        mask[i] = keep;
        out[i] = keep ? in[i] * scale : 0.0F;
      }
    });
    ctx.set_output(0, std::move(y));
    if (ctx.num_outputs() > 1) ctx.set_output(1, state->mask);
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const auto& state = dynamic_cast<const DropoutState&>(*ctx.state());
    if (!state.mask.defined()) {
      ctx.set_input_grad(0, *dy);  // identity: the gradient passes unchanged
      return;
    }
    Tensor dx(DType::kFloat32, dy->shape());
    const float* g = dy->data<float>();
    const bool* mask = state.mask.data<bool>();
    float* d = dx.data<float>();
    const float scale = state.scale;
    ParallelFor(dx.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) d[i] = mask[i] ? g[i] * scale : 0.0F;
    });
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  static Tensor AllTrue(const Shape& shape) {
    Tensor mask(DType::kBool, shape);
    std::fill(mask.data<bool>(), mask.data<bool>() + mask.numel(), true);
    return mask;
  }

  bool ratio_from_attribute_;
  float attribute_ratio_;
};

AUTODIST_REGISTER_KERNEL(Dropout, 10, 17, DropoutKernel);

}  // namespace
}  // namespace autodist::ops
