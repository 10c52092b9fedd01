// Gemm: Y = alpha * op(A) op(B) + beta * C, with C broadcast to [M, N] (opsets 11..17). With a
// Relu the planner fused into it (NodeInfo::fused_activation), Y = relu(...), applied slice by
// slice as the product is computed (blas.h); backward reads Relu's gradient off Y first, as the
// Relu kernel does, so the fused step gives Gemm-then-Relu's bits.
#include "runtime/common/error.h"
#include "runtime/ops/fused_activation.h"
#include "runtime/ops/math/blas.h"
#include "runtime/ops/math/gemm_shape.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::ops {
namespace {

class GemmKernel final : public OpKernel {
 public:
  explicit GemmKernel(const NodeInfo& node)
      : OpKernel(node),
        trans_a_(node.GetInt("transA", 0) != 0),
        trans_b_(node.GetInt("transB", 0) != 0),
        alpha_(node.GetFloat("alpha", 1.0F)),
        beta_(node.GetFloat("beta", 1.0F)),
        activation_(node.fused_activation()) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const bool use_c = ctx.has_input(2) && beta_ != 0.0F;
    const auto [m, n, k] =
        CheckGemmShapes(ctx.Describe(), a, b, use_c ? &ctx.input(2) : nullptr, trans_a_, trans_b_);
    Tensor y(DType::kFloat32, {m, n});
    float beta = 0.0F;
    if (use_c) {
      const Tensor& c = ctx.input(2);
      // Broadcast C into Y, then let GEMM accumulate onto it with beta.
      auto* out = y.data<float>();
      const auto* bias = c.data<float>();
      const std::vector<int64_t> strides = tensor::BroadcastStrides(c.shape(), {m, n});
      const std::vector<int64_t> none(2, 0);
      tensor::ForEachBroadcast({m, n}, strides, none,
                               [&](int64_t o, int64_t ci, int64_t) { out[o] = bias[ci]; });
      beta = beta_;
    }
    Sgemm(trans_a_, trans_b_, m, n, k, alpha_, a.data<float>(), b.data<float>(), beta,
          y.data<float>(), activation_);
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    // The fused activation's gradient first: dY becomes the gradient of the product.
    Tensor dz;
    if (activation_ != FusedActivation::kNone) {
      dz = FusedActivationGrad(activation_, *dy, ctx.output(0));
      dy = &dz;
    }
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const int64_t m = dy->dim(0);
    const int64_t n = dy->dim(1);
    const int64_t k = trans_a_ ? a.dim(0) : a.dim(1);
    if (ctx.needs_grad(0)) {
      Tensor da(DType::kFloat32, a.shape());
      if (!trans_a_) {  // dA [M,K] = alpha dY op(B)^T
        Sgemm(false, !trans_b_, m, k, n, alpha_, dy->data<float>(), b.data<float>(), 0.0F,
              da.data<float>());
      } else {  // dA [K,M] = alpha op(B) dY^T
        Sgemm(trans_b_, true, k, m, n, alpha_, b.data<float>(), dy->data<float>(), 0.0F,
              da.data<float>());
      }
      ctx.set_input_grad(0, std::move(da));
    }
    if (ctx.needs_grad(1)) {
      Tensor db(DType::kFloat32, b.shape());
      if (!trans_b_) {  // dB [K,N] = alpha op(A)^T dY
        Sgemm(!trans_a_, false, k, n, m, alpha_, a.data<float>(), dy->data<float>(), 0.0F,
              db.data<float>());
      } else {  // dB [N,K] = alpha dY^T op(A)
        Sgemm(true, trans_a_, n, k, m, alpha_, dy->data<float>(), a.data<float>(), 0.0F,
              db.data<float>());
      }
      ctx.set_input_grad(1, std::move(db));
    }
    if (ctx.has_input(2) && ctx.needs_grad(2)) {
      Tensor dc = tensor::ReduceToShape(*dy, ctx.input(2).shape()).Clone();
      auto* data = dc.data<float>();
      for (int64_t i = 0; i < dc.numel(); ++i) data[i] *= beta_;
      ctx.set_input_grad(2, std::move(dc));
    }
  }

  // Only a fused activation's gradient reads the output.
  bool BackwardNeedsOutput(size_t /*output*/) const override {
    return activation_ != FusedActivation::kNone;
  }

  bool TakesFusedActivation(FusedActivation activation) const override {
    return activation == FusedActivation::kRelu;
  }

 private:
  bool trans_a_;
  bool trans_b_;
  float alpha_;
  float beta_;
  FusedActivation activation_;
};

AUTODIST_REGISTER_KERNEL(Gemm, 11, 17, GemmKernel);

}  // namespace
}  // namespace autodist::ops
