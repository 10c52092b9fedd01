// Relu: y = max(x, 0); dx = dy where y > 0 (PyTorch's choice at 0: gradient 0). The math is
// ReluOp (math/unary_math.h), shared with the CUDA kernel.
#include "runtime/ops/math/unary_math.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

class ReluKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor y(DType::kFloat32, x.shape());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    ParallelFor(x.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = ReluOp::Forward(in[i]);
    });
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const Tensor& y = ctx.output(0);
    Tensor dx(DType::kFloat32, y.shape());
    const float* g = dy->data<float>();
    const float* out = y.data<float>();
    float* d = dx.data<float>();
    ParallelFor(y.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) d[i] = ReluOp::Grad(g[i], out[i]);
    });
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
};

AUTODIST_REGISTER_KERNEL(Relu, 6, 17, ReluKernel);

}  // namespace
}  // namespace autodist::ops
