// Gemm on CUDA (opsets 11..17): Y = alpha * op(A) op(B) + beta * C through cuBLASLt (gpu/blas),
// float32. A bias C of shape [N] or [1, N] with beta = 1 (every exported Linear layer) rides in
// the product's epilogue; any other C is broadcast into Y first and weighted by beta. Gradients
// as on the CPU (runtime/ops/math/gemm.cc). Products run in TF32 or BF16 when the session's
// precision asks. A Relu the planner fused into the node (NodeInfo::fused_activation) rides in
// the same epilogue (cuBLASLt's RELU or RELU_BIAS); backward reads its gradient off Y first with
// the Relu kernel's own math, then runs Gemm's backward on it.
#include "gpu/blas/matmul.h"
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/ops/math/gemm_shape.h"
#include "runtime/ops/math/unary_math.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using ops::FusedActivation;
using tensor::DType;
using tensor::Tensor;

GemmActivation GemmActivationOf(FusedActivation activation) {
  switch (activation) {
    case FusedActivation::kRelu:
      return GemmActivation::kRelu;
    case FusedActivation::kNone:
      break;
  }
  return GemmActivation::kNone;
}

class CudaGemmKernel final : public ops::OpKernel {
 public:
  explicit CudaGemmKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        trans_a_(node.GetInt("transA", 0) != 0),
        trans_b_(node.GetInt("transB", 0) != 0),
        alpha_(node.GetFloat("alpha", 1.0F)),
        beta_(node.GetFloat("beta", 1.0F)),
        math_(detail::GemmMathOf(node.precision())),
        activation_(node.fused_activation()) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    cudaStream_t stream = detail::StreamOf(node, a);
    detail::StreamOf(node, b);
    detail::RequireFloat32(node, a, "A");
    detail::RequireFloat32(node, b, "B");
    const bool use_c = ctx.has_input(2) && beta_ != 0.0F;
    const Tensor* c = use_c ? &ctx.input(2) : nullptr;
    if (c != nullptr) {
      detail::StreamOf(node, *c);
      detail::RequireFloat32(node, *c, "C");
    }
    const auto [m, n, k] = ops::CheckGemmShapes(node, a, b, c, trans_a_, trans_b_);
    Tensor y(DType::kFloat32, {m, n}, a.device());
    GemmCall call{.trans_a = trans_a_,
                  .trans_b = trans_b_,
                  .m = m,
                  .n = n,
                  .k = k,
                  .alpha = alpha_,
                  .a = a.device_data<float>(),
                  .b = b.device_data<float>(),
                  .c = y.device_data<float>(),
                  .activation = GemmActivationOf(activation_),
                  .math = math_};
    const bool bias_row = c != nullptr && beta_ == 1.0F && c->numel() == n &&
                          (c->shape() == tensor::Shape{n} || c->shape() == tensor::Shape{1, n});
    if (bias_row && k > 0) {
      call.bias = c->device_data<float>();
    } else if (c != nullptr) {
      detail::LaunchBroadcastBinary<detail::SecondOfTwo>(
          y.device_data<float>(), c->device_data<float>(), y.device_data<float>(),
          detail::PlanBroadcast({m, n}, c->shape(), {m, n}, node), stream);
      call.beta = beta_;
    }
    if (k == 0) {  // no products: Y is beta * C, or zeros, and its activation
      if (c == nullptr) {
        y.SetZero();
      } else {
        detail::LaunchScale(y.device_data<float>(), y.numel(), beta_, stream);
      }
      if (activation_ == FusedActivation::kRelu) {
        detail::LaunchUnaryForward<ops::ReluOp>(y.device_data<float>(), y.device_data<float>(),
                                                y.numel(), stream);
      }
    } else {
      Sgemm(call, a.device().index, stream);
    }
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const int device = dy->device().index;
    // The fused activation's gradient first: dY becomes the gradient of the product.
    Tensor dz;
    if (activation_ == FusedActivation::kRelu) {
      const Tensor& y = ctx.output(0);
      dz = Tensor(DType::kFloat32, y.shape(), y.device());
      detail::LaunchUnaryGrad<ops::ReluOp>(dy->device_data<float>(), y.device_data<float>(),
                                           dz.device_data<float>(), dz.numel(), stream);
      dy = &dz;
    }
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const int64_t m = dy->dim(0);
    const int64_t n = dy->dim(1);
    const int64_t k = trans_a_ ? a.dim(0) : a.dim(1);
    const auto* g = dy->device_data<float>();
    if (ctx.needs_grad(0)) {
      Tensor da(DType::kFloat32, a.shape(), a.device());
      if (!trans_a_) {  // dA [M,K] = alpha dY op(B)^T
        Product(false, !trans_b_, m, k, n, g, b.device_data<float>(), da, device, stream);
      } else {  // dA [K,M] = alpha op(B) dY^T
        Product(trans_b_, true, k, m, n, b.device_data<float>(), g, da, device, stream);
      }
      ctx.set_input_grad(0, std::move(da));
    }
    if (ctx.needs_grad(1)) {
      Tensor db(DType::kFloat32, b.shape(), b.device());
      if (!trans_b_) {  // dB [K,N] = alpha op(A)^T dY
        Product(!trans_a_, false, k, n, m, a.device_data<float>(), g, db, device, stream);
      } else {  // dB [N,K] = alpha dY^T op(A)
        Product(true, trans_a_, n, k, m, g, a.device_data<float>(), db, device, stream);
      }
      ctx.set_input_grad(1, std::move(db));
    }
    if (ctx.has_input(2) && ctx.needs_grad(2)) {
      const tensor::Shape& c_shape = ctx.input(2).shape();
      Tensor dc(DType::kFloat32, c_shape, dy->device());
      detail::LaunchSumToShape(g, dc.device_data<float>(),
                               detail::PlanSumToShape(dy->shape(), c_shape, node), stream);
      if (beta_ != 1.0F) detail::LaunchScale(dc.device_data<float>(), dc.numel(), beta_, stream);
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
  // out = alpha op(x) op(y), or zeros when the inner dimension is empty.
  void Product(bool trans_x, bool trans_y, int64_t rows, int64_t cols, int64_t inner,
               const float* x, const float* y, Tensor& out, int device, cudaStream_t stream) const {
    if (inner == 0) {
      out.SetZero();
      return;
    }
    Sgemm(GemmCall{.trans_a = trans_x,
                   .trans_b = trans_y,
                   .m = rows,
                   .n = cols,
                   .k = inner,
                   .alpha = alpha_,
                   .a = x,
                   .b = y,
                   .c = out.device_data<float>(),
                   .math = math_},
          device, stream);
  }

  bool trans_a_;
  bool trans_b_;
  float alpha_;
  float beta_;
  GemmMath math_;  // the session's precision
  FusedActivation activation_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(Gemm, 11, 17, CudaGemmKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
