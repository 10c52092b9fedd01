// MatMul on CUDA (opsets 1..17): the CPU kernel's numpy semantics and checks
// (runtime/ops/math/matmul.cc, matmul_shape.h), float32, through cuBLASLt. When the second
// operand has no batch, the first folds into one [E * M, K] matrix and the product is one call
// (the Linear-layer case); when neither operand is broadcast, the entries are one strided batch
// (attention's per-head products); otherwise each entry is its own call. Gradients as on the
// CPU: dA = dY Bᵀ and dB = Aᵀ dY per entry, summed over the entries that share a matrix.
// Products run in TF32 or BF16 when the session's precision asks. The Add of a bias the planner
// fused into the node (NodeInfo::fused_bias, input 2) rides in cuBLASLt's bias epilogue; its
// gradient is the CUDA Add kernel's sum of dY over the rows.
#include "gpu/blas/matmul.h"
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/ops/math/arithmetic_math.h"
#include "runtime/ops/math/matmul_shape.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using ops::MatMulShape;
using tensor::DType;
using tensor::Tensor;

class CudaMatMulKernel final : public ops::OpKernel {
 public:
  explicit CudaMatMulKernel(const ops::NodeInfo& node)
      : OpKernel(node), math_(detail::GemmMathOf(node.precision())), bias_(node.fused_bias()) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    cudaStream_t stream = detail::StreamOf(node, a);
    detail::StreamOf(node, b);
    detail::RequireFloat32(node, a, "A");
    detail::RequireFloat32(node, b, "B");
    const MatMulShape s = ops::ResolveMatMul(a.shape(), b.shape(), node);
    Tensor y(DType::kFloat32, s.out_shape, a.device());
    const auto* pa = a.device_data<float>();
    const auto* pb = b.device_data<float>();
    auto* py = y.device_data<float>();
    const int device = a.device().index;
    if (y.numel() == 0) {
      ctx.set_output(0, std::move(y));
      return;
    }
    const float* bias = bias_ ? FusedBias(ctx, s) : nullptr;
    if (s.k == 0) {
      y.SetZero();
      if (bias != nullptr) {  // 0 + bias, as the Add would compute it
        detail::LaunchBroadcastBinary<ops::ArithmeticOp<ops::Arithmetic::kAdd, float>>(
            py, bias, py, detail::PlanBroadcast(y.shape(), ctx.input(2).shape(), y.shape(), node),
            stream);
      }
    } else if (s.b_single) {  // Y [E*M, N] = A [E*M, K] B (+ bias)
      Product(false, false, s.entries() * s.m, s.n, s.k, pa, pb, 0.0F, py, device, stream, bias);
    } else if (s.one_to_one()) {  // Y_e = A_e B_e, one strided batch
      Batched(false, false, s.m, s.n, s.k, pa, pb, py, s.entries(), device, stream);
    } else {
      for (int64_t i = 0; i < s.entries(); ++i) {
        const auto e = static_cast<size_t>(i);
        Product(false, false, s.m, s.n, s.k, pa + s.a_offsets[e], pb + s.b_offsets[e], 0.0F,
                py + i * s.m * s.n, device, stream);
      }
    }
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const std::string& node = description();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const int device = dy->device().index;
    const MatMulShape s = ops::ResolveMatMul(a.shape(), b.shape(), node);
    const auto* pa = a.device_data<float>();
    const auto* pb = b.device_data<float>();
    const auto* g = dy->device_data<float>();
    const bool empty = s.m * s.n * s.entries() == 0;
    if (ctx.needs_grad(0)) {
      Tensor da(DType::kFloat32, a.shape(), a.device());
      auto* d = da.device_data<float>();
      if (empty || s.a_broadcast) da.SetZero();
      if (empty) {
      } else if (s.b_single) {  // dA [E*M, K] = dY [E*M, N] Bᵀ
        Product(false, true, s.entries() * s.m, s.k, s.n, g, pb, 0.0F, d, device, stream);
      } else if (s.one_to_one()) {
        Batched(false, true, s.m, s.k, s.n, g, pb, d, s.entries(), device, stream);
      } else {  // dA_e (+)= dY_e B_eᵀ, summed over the entries sharing an a matrix
        for (int64_t i = 0; i < s.entries(); ++i) {
          const auto e = static_cast<size_t>(i);
          Product(false, true, s.m, s.k, s.n, g + i * s.m * s.n, pb + s.b_offsets[e],
                  s.a_broadcast ? 1.0F : 0.0F, d + s.a_offsets[e], device, stream);
        }
      }
      ctx.set_input_grad(0, std::move(da));
    }
    if (ctx.needs_grad(1)) {
      Tensor db(DType::kFloat32, b.shape(), b.device());
      auto* d = db.device_data<float>();
      if (empty || (s.b_broadcast && !s.b_single)) db.SetZero();
      if (empty) {
      } else if (s.b_single) {  // dB [K, N] = Aᵀ [K, E*M] dY [E*M, N]
        Product(true, false, s.k, s.n, s.entries() * s.m, pa, g, 0.0F, d, device, stream);
      } else if (s.one_to_one()) {
        Batched(true, false, s.k, s.n, s.m, pa, g, d, s.entries(), device, stream);
      } else {  // dB_e (+)= A_eᵀ dY_e
        for (int64_t i = 0; i < s.entries(); ++i) {
          const auto e = static_cast<size_t>(i);
          Product(true, false, s.k, s.n, s.m, pa + s.a_offsets[e], g + i * s.m * s.n,
                  s.b_broadcast ? 1.0F : 0.0F, d + s.b_offsets[e], device, stream);
        }
      }
      ctx.set_input_grad(1, std::move(db));
    }
    if (bias_ && ctx.needs_grad(2)) {
      // The CUDA Add kernel's gradient of its bias operand: dY summed over the rows.
      ctx.set_input_grad(2, detail::SumToShape(node, *dy, ctx.input(2).shape(), stream));
    }
  }

  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
  bool TakesFusedBias() const override { return true; }

 private:
  // The fused bias (input 2): float32 [N] on the output's GPU, and only where the product is one
  // call (the planner fuses it only where B is a matrix). Internal otherwise.
  const float* FusedBias(const ops::ForwardContext& ctx, const MatMulShape& s) const {
    const Tensor& bias = ctx.input(2);
    detail::StreamOf(description(), bias);
    AD_CHECK(s.b_single && bias.dtype() == DType::kFloat32 && bias.shape() == tensor::Shape{s.n},
             kInternal,
             "{}: the fused bias must be float32 [{}] on a product with one matrix B, got {} {}",
             description(), s.n, tensor::DTypeName(bias.dtype()),
             tensor::ShapeToString(bias.shape()));
    return bias.device_data<float>();
  }

  // C [rows, cols] = op(x) op(y) + beta C (+ bias [cols] on every row); with an empty inner
  // dimension, C is left (beta 1) or zeroed by the caller.
  void Product(bool trans_x, bool trans_y, int64_t rows, int64_t cols, int64_t inner,
               const float* x, const float* y, float beta, float* c, int device,
               cudaStream_t stream, const float* bias = nullptr) const {
    if (inner == 0) return;
    Sgemm(GemmCall{.trans_a = trans_x,
                   .trans_b = trans_y,
                   .m = rows,
                   .n = cols,
                   .k = inner,
                   .a = x,
                   .b = y,
                   .beta = beta,
                   .c = c,
                   .bias = bias,
                   .math = math_},
          device, stream);
  }

  // C_e = op(x_e) op(y_e) for e < count, every operand packed and consecutive: one strided batch.
  void Batched(bool trans_x, bool trans_y, int64_t rows, int64_t cols, int64_t inner,
               const float* x, const float* y, float* c, int64_t count, int device,
               cudaStream_t stream) const {
    Sgemm(GemmCall{.trans_a = trans_x,
                   .trans_b = trans_y,
                   .m = rows,
                   .n = cols,
                   .k = inner,
                   .a = x,
                   .b = y,
                   .c = c,
                   .math = math_,
                   .batch = count,
                   .stride_a = rows * inner,
                   .stride_b = inner * cols,
                   .stride_c = rows * cols},
          device, stream);
  }

  GemmMath math_;  // the session's precision
  bool bias_;      // an Add of a bias fused into this node (NodeInfo::fused_bias)
};

AUTODIST_REGISTER_DEVICE_KERNEL(MatMul, 1, 17, CudaMatMulKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
