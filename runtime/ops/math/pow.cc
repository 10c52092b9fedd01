// Pow (opsets 7..17): y = base ^ exponent with ONNX multidirectional broadcasting. The base is
// float32; the exponent is float32 or an integer tensor (used as float, and not differentiable).
// Gradients follow PyTorch: d base = dy * e * x^(e-1), zero where e == 0; d exponent =
// dy * y * log(x), zero where x == 0 and e >= 0. A one-element exponent takes the special cases
// PyTorch takes (x*x for 2, sqrt for 0.5, ...), in forward and backward alike.
#include <cmath>
#include <cstdint>

#include "runtime/common/error.h"
#include "runtime/ops/math/elementwise.h"
#include "runtime/ops/math/pow_exponent.h"
#include "runtime/ops/math/reduce_sum.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::ops {
namespace {

// Calls body(pow_e) where pow_e(x) computes x^e, specialized for the exponents with a cheaper
// exact form, so the loop inside `body` is compiled once per form.
template <typename Body>
void WithScalarPow(float e, Body&& body) {
  if (e == 0.0F) return body([](float /*x*/) { return 1.0F; });
  if (e == 1.0F) return body([](float x) { return x; });
  if (e == 2.0F) return body([](float x) { return x * x; });
  if (e == 3.0F) return body([](float x) { return x * x * x; });
  if (e == 0.5F) return body([](float x) { return std::sqrt(x); });
  if (e == -0.5F) return body([](float x) { return 1.0F / std::sqrt(x); });
  if (e == -1.0F) return body([](float x) { return 1.0F / x; });
  if (e == -2.0F) return body([](float x) { return 1.0F / (x * x); });
  return body([e](float x) { return std::pow(x, e); });
}

// d y / d exponent as PyTorch defines it (0 instead of 0 * log 0 for x == 0, e >= 0).
inline float ExponentFactor(float x, float e, float y) {
  return x == 0.0F && e >= 0.0F ? 0.0F : y * std::log(x);
}

class PowKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override {
    const Tensor& base = ctx.input(0);
    AD_CHECK(base.dtype() == DType::kFloat32, kInvalidArgument, "{}: base must be float32, got {}",
             ctx.Describe(), tensor::DTypeName(base.dtype()));
    const Tensor exponent = PowExponentAsFloat(ctx.input(1), ctx.Describe());
    const Shape shape = tensor::BroadcastShapes(base.shape(), exponent.shape(), ctx.Describe());
    Tensor y(DType::kFloat32, shape);
    const auto* x = base.data<float>();
    const auto* e = exponent.data<float>();
    auto* out = y.data<float>();
    if (exponent.numel() == 1 && base.numel() == y.numel()) {
      WithScalarPow(e[0], [&](auto pow_e) { MapUnary(x, out, y.numel(), pow_e); });
    } else {
      BroadcastBinary(x, base.shape(), e, exponent.shape(), out, shape,
                      [](float xi, float ei) { return std::pow(xi, ei); });
    }
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const Tensor& base = ctx.input(0);
    const Tensor exponent = PowExponentAsFloat(ctx.input(1), ctx.Describe());
    const Shape& shape = dy->shape();
    const int64_t n = dy->numel();
    const auto* g = dy->data<float>();
    const auto* x = base.data<float>();
    const auto* e = exponent.data<float>();
    const bool scalar_exponent = exponent.numel() == 1 && base.numel() == n;

    if (ctx.needs_grad(0)) {
      Tensor dx(DType::kFloat32, shape);
      auto* d = dx.data<float>();
      if (scalar_exponent) {
        const float e0 = e[0];
        if (e0 == 0.0F) {
          dx.SetZero();
        } else {
          WithScalarPow(e0 - 1.0F, [&](auto pow_e1) {
            MapBinary(g, x, d, n, [=](float gi, float xi) { return gi * (e0 * pow_e1(xi)); });
          });
        }
      } else {
        BroadcastBinary(x, base.shape(), e, exponent.shape(), d, shape, [](float xi, float ei) {
          return ei == 0.0F ? 0.0F : ei * std::pow(xi, ei - 1.0F);
        });
        MapBinary(g, d, d, n, [](float gi, float fi) { return gi * fi; });
      }
      ctx.set_input_grad(0, SumToShape(dx, base.shape()));
    }
    if (ctx.needs_grad(1) && ctx.input(1).dtype() == DType::kFloat32) {
      // y is recomputed rather than kept from forward: exponents rarely need a gradient, and
      // not keeping y lets the executor free it early in the common case.
      Tensor de(DType::kFloat32, shape);
      auto* d = de.data<float>();
      if (scalar_exponent) {
        const float e0 = e[0];
        WithScalarPow(e0, [&](auto pow_e) {
          MapBinary(g, x, d, n,
                    [=](float gi, float xi) { return gi * ExponentFactor(xi, e0, pow_e(xi)); });
        });
      } else {
        BroadcastBinary(x, base.shape(), e, exponent.shape(), d, shape, [](float xi, float ei) {
          return ExponentFactor(xi, ei, std::pow(xi, ei));
        });
        MapBinary(g, d, d, n, [](float gi, float fi) { return gi * fi; });
      }
      ctx.set_input_grad(1, SumToShape(de, exponent.shape()));
    }
  }

  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
};

AUTODIST_REGISTER_KERNEL(Pow, 7, 17, PowKernel);

}  // namespace
}  // namespace autodist::ops
