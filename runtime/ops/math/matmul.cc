// MatMul (opsets 1..17) with numpy semantics: a 1-D first operand is a row [1, K] and a 1-D
// second operand a column [K, 1], the added axis removed from the result; axes before the last
// two are batch axes, broadcast against each other. When the second operand has no batch, the
// first folds into one [batch * M, K] matrix and the product is a single GEMM (the Linear-layer
// case); otherwise one GEMM runs per batch entry, in parallel when the matrices are small. With
// the Add of a bias the planner fused into it (NodeInfo::fused_bias: a Linear layer on a
// sequence, MatMul then Add), the bias comes as input 2 and is added to each slice of the product
// as it is computed (blas.h); its gradient is the Add kernel's sum of dY over the rows, so the
// fused step gives MatMul-then-Add's bits.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/math/blas.h"
#include "runtime/ops/math/matmul_shape.h"
#include "runtime/ops/math/reduce_sum.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::ops {
namespace {

// Below this many multiply-adds OpenBLAS runs a GEMM on one thread, so batch entries are spread
// over our threads instead.
constexpr int64_t kSmallGemm = int64_t{1} << 18;

// Sgemm with an empty inner dimension handled here (the product is zero): such a call would pass
// leading dimension 0, which the CBLAS interface does not allow. `bias` [n] (or null) is added to
// every row of the product.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
          const float* b, float beta, float* c, const float* bias = nullptr) {
  if (k == 0) {
    if (beta == 0.0F) {
      for (int64_t i = 0; i < m * n; ++i) c[i] = 0.0F;
    }
    if (bias != nullptr) {
      for (int64_t i = 0; i < m * n; ++i) c[i] += bias[i % n];
    }
    return;
  }
  Sgemm(trans_a, trans_b, m, n, k, 1.0F, a, b, beta, c, FusedActivation::kNone, bias);
}

// Runs fn(entry) for every batch entry: in parallel when each GEMM is small (and `parallel_ok`:
// entries write disjoint memory), serially otherwise so that BLAS threads each one.
template <typename Fn>
void ForEachEntry(const MatMulShape& s, bool parallel_ok, Fn&& fn) {
  const auto entries = static_cast<int64_t>(s.a_offsets.size());
  const int64_t work = std::max<int64_t>(1, s.m * s.n * s.k);
  if (parallel_ok && entries > 1 && work < kSmallGemm) {
    ParallelFor(entries, std::max<int64_t>(1, kSmallGemm / work), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) fn(static_cast<size_t>(i));
    });
  } else {
    for (size_t i = 0; i < s.a_offsets.size(); ++i) fn(i);
  }
}

class MatMulKernel final : public OpKernel {
 public:
  explicit MatMulKernel(const NodeInfo& node) : OpKernel(node), bias_(node.fused_bias()) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    AD_CHECK(a.dtype() == DType::kFloat32 && b.dtype() == DType::kFloat32, kInvalidArgument,
             "{}: operands must be float32, got {} and {}", ctx.Describe(),
             tensor::DTypeName(a.dtype()), tensor::DTypeName(b.dtype()));
    const MatMulShape s = ResolveMatMul(a.shape(), b.shape(), ctx.Describe());
    Tensor y(DType::kFloat32, s.out_shape);
    const auto* pa = a.data<float>();
    const auto* pb = b.data<float>();
    auto* py = y.data<float>();
    const auto entries = static_cast<int64_t>(s.a_offsets.size());
    const float* bias = bias_ ? FusedBias(ctx, s) : nullptr;
    if (s.b_single) {  // Y [E*M, N] = A [E*M, K] B (+ bias)
      Gemm(false, false, entries * s.m, s.n, s.k, pa, pb, 0.0F, py, bias);
    } else {
      ForEachEntry(s, true, [&](size_t i) {
        Gemm(false, false, s.m, s.n, s.k, pa + s.a_offsets[i], pb + s.b_offsets[i], 0.0F,
             py + static_cast<int64_t>(i) * s.m * s.n);
      });
    }
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const MatMulShape s = ResolveMatMul(a.shape(), b.shape(), ctx.Describe());
    const auto entries = static_cast<int64_t>(s.a_offsets.size());
    const auto* pa = a.data<float>();
    const auto* pb = b.data<float>();
    const auto* g = dy->data<float>();
    if (ctx.needs_grad(0)) {
      Tensor da = s.a_broadcast ? Tensor::Zeros(DType::kFloat32, a.shape())
                                : Tensor(DType::kFloat32, a.shape());
      auto* d = da.data<float>();
      if (s.b_single) {  // dA [E*M, K] = dY [E*M, N] B^T
        Gemm(false, true, entries * s.m, s.k, s.n, g, pb, 0.0F, d);
      } else {  // dA_e (+)= dY_e B_e^T, summed over the entries sharing an a matrix
        ForEachEntry(s, !s.a_broadcast, [&](size_t i) {
          Gemm(false, true, s.m, s.k, s.n, g + static_cast<int64_t>(i) * s.m * s.n,
               pb + s.b_offsets[i], s.a_broadcast ? 1.0F : 0.0F, d + s.a_offsets[i]);
        });
      }
      ctx.set_input_grad(0, std::move(da));
    }
    if (ctx.needs_grad(1)) {
      Tensor db = s.b_broadcast ? Tensor::Zeros(DType::kFloat32, b.shape())
                                : Tensor(DType::kFloat32, b.shape());
      auto* d = db.data<float>();
      if (s.b_single) {  // dB [K, N] = A^T [K, E*M] dY [E*M, N]
        Gemm(true, false, s.k, s.n, entries * s.m, pa, g, 0.0F, d);
      } else {  // dB_e (+)= A_e^T dY_e
        ForEachEntry(s, !s.b_broadcast, [&](size_t i) {
          Gemm(true, false, s.k, s.n, s.m, pa + s.a_offsets[i],
               g + static_cast<int64_t>(i) * s.m * s.n, s.b_broadcast ? 1.0F : 0.0F,
               d + s.b_offsets[i]);
        });
      }
      ctx.set_input_grad(1, std::move(db));
    }
    if (bias_ && ctx.needs_grad(2)) {
      // The Add kernel's gradient of its bias operand: dY summed over the rows.
      ctx.set_input_grad(2, SumToShape(*dy, ctx.input(2).shape()));
    }
  }

  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
  bool TakesFusedBias() const override { return true; }

 private:
  // The fused bias (input 2): float32 [N], and only where the product is one GEMM (the planner
  // fuses it only where B is a matrix). Internal otherwise: the planner checked both.
  static const float* FusedBias(const ForwardContext& ctx, const MatMulShape& s) {
    const Tensor& bias = ctx.input(2);
    AD_CHECK(s.b_single && bias.dtype() == DType::kFloat32 && bias.shape() == tensor::Shape{s.n},
             kInternal,
             "{}: the fused bias must be float32 [{}] on a product with one matrix B, "
             "got {} {}",
             ctx.Describe(), s.n, tensor::DTypeName(bias.dtype()),
             tensor::ShapeToString(bias.shape()));
    return bias.data<float>();
  }

  bool bias_;  // an Add of a bias fused into this node (NodeInfo::fused_bias)
};

AUTODIST_REGISTER_KERNEL(MatMul, 1, 17, MatMulKernel);

}  // namespace
}  // namespace autodist::ops
