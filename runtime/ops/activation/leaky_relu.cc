// LeakyRelu (opsets 6..17): y = x for x > 0, alpha * x otherwise; dx = dy for x > 0, alpha * dy
// otherwise (PyTorch's choice at 0: the alpha side). For alpha >= 0, y > 0 exactly where x > 0,
// so Backward reads the output, which the next op usually keeps anyway, and the input can be
// freed early; a negative alpha needs the input.
#include "runtime/common/error.h"
#include "runtime/ops/math/elementwise.h"
#include "runtime/ops/math/vector_math.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

class LeakyReluKernel final : public OpKernel {
 public:
  explicit LeakyReluKernel(const NodeInfo& node)
      : OpKernel(node), alpha_(node.GetFloat("alpha", 0.01F)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.dtype() == DType::kFloat32, kInvalidArgument, "{}: input must be float32, got {}",
             ctx.Describe(), tensor::DTypeName(x.dtype()));
    Tensor y(DType::kFloat32, x.shape());
    const float alpha = alpha_;
    // v * (1 or alpha) is exactly v or alpha * v; the mask select keeps the loop vectorized.
    MapUnary(x.data<float>(), y.data<float>(), x.numel(),
             [alpha](float v) { return v * vec::Select(v > 0.0F, 1.0F, alpha); });
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const Tensor& sign_source = ReadsOutput() ? ctx.output(0) : ctx.input(0);
    Tensor dx(DType::kFloat32, dy->shape());
    const float alpha = alpha_;
    MapBinary(dy->data<float>(), sign_source.data<float>(), dx.data<float>(), dx.numel(),
              [alpha](float g, float v) { return g * vec::Select(v > 0.0F, 1.0F, alpha); });
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return !ReadsOutput(); }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return ReadsOutput(); }

 private:
  bool ReadsOutput() const { return alpha_ >= 0.0F; }

  float alpha_;
};

AUTODIST_REGISTER_KERNEL(LeakyRelu, 6, 17, LeakyReluKernel);

}  // namespace
}  // namespace autodist::ops
