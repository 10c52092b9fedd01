// The per-element math of the one-input element-wise ops, for the CPU kernels (math/, activation/)
// and the CUDA kernels (gpu/ops/) alike: each op's Forward(x) and its Grad(dy, v), where v is
// what the gradient reads (the input, the output, or nothing), as PyTorch defines them:
//   Neg:     dx = -dy                      (nothing)
//   Exp:     dx = dy * y                   (output)
//   Log:     dx = dy / x                   (input)
//   Sqrt:    dx = dy / (2 y)               (output, PyTorch's form)
//   Erf:     dx = dy * 2/sqrt(pi) e^(-x^2) (input)
//   Sigmoid: dx = dy * (1 - y) * y         (output)
//   Tanh:    dx = dy * (1 - y^2)           (output)
//   Relu:    dx = dy where y > 0           (output; PyTorch's choice at 0: gradient 0)
// Exp, Sigmoid and Tanh use vec:: (vector_math.h) and give the same bits on both backends; Log,
// Sqrt and Erf use each backend's library function (IEEE square root on both; log and erf within
// an ulp or two of each other).
#pragma once

#include <algorithm>
#include <cmath>
#include <numbers>

#include "runtime/common/host_device.h"
#include "runtime/ops/math/vector_math.h"

namespace autodist::ops {

// What an op's gradient reads besides the output gradient.
enum class GradReads { kNothing, kInput, kOutput };

struct NegOp {
  static constexpr GradReads kReads = GradReads::kNothing;
  static constexpr bool kInt64 = true;  // also negates int64 (shape arithmetic), on the CPU
  template <typename T>
  AUTODIST_HOST_DEVICE static T Forward(T x) {
    return -x;
  }
  AUTODIST_HOST_DEVICE static float Grad(float dy, float /*unused*/) { return -dy; }
};

struct ExpOp {
  static constexpr GradReads kReads = GradReads::kOutput;
  static constexpr bool kInt64 = false;
  AUTODIST_HOST_DEVICE static float Forward(float x) { return vec::Exp(x); }
  AUTODIST_HOST_DEVICE static float Grad(float dy, float y) { return dy * y; }
};

struct LogOp {
  static constexpr GradReads kReads = GradReads::kInput;
  static constexpr bool kInt64 = false;
  AUTODIST_HOST_DEVICE static float Forward(float x) {
#ifdef __CUDA_ARCH__
    return logf(x);
#else
    return std::log(x);
#endif
  }
  AUTODIST_HOST_DEVICE static float Grad(float dy, float x) { return dy / x; }
};

struct SqrtOp {
  static constexpr GradReads kReads = GradReads::kOutput;
  static constexpr bool kInt64 = false;
  AUTODIST_HOST_DEVICE static float Forward(float x) { return vec::Sqrt(x); }
  AUTODIST_HOST_DEVICE static float Grad(float dy, float y) { return dy / (2.0F * y); }
};

struct ErfOp {
  static constexpr GradReads kReads = GradReads::kInput;
  static constexpr bool kInt64 = false;
  AUTODIST_HOST_DEVICE static float Forward(float x) {
#ifdef __CUDA_ARCH__
    return erff(x);
#else
    return std::erf(x);
#endif
  }
  AUTODIST_HOST_DEVICE static float Grad(float dy, float x) {
    constexpr float kTwoOverSqrtPi = static_cast<float>(2.0 * std::numbers::inv_sqrtpi);
    return kTwoOverSqrtPi * vec::Exp(-(x * x)) * dy;
  }
};

struct SigmoidOp {
  static constexpr GradReads kReads = GradReads::kOutput;
  static constexpr bool kInt64 = false;
  AUTODIST_HOST_DEVICE static float Forward(float x) { return 1.0F / (1.0F + vec::Exp(-x)); }
  AUTODIST_HOST_DEVICE static float Grad(float dy, float y) { return dy * (1.0F - y) * y; }
};

struct TanhOp {
  static constexpr GradReads kReads = GradReads::kOutput;
  static constexpr bool kInt64 = false;
  AUTODIST_HOST_DEVICE static float Forward(float x) { return vec::Tanh(x); }
  AUTODIST_HOST_DEVICE static float Grad(float dy, float y) { return dy * (1.0F - y * y); }
};

struct ReluOp {
  static constexpr GradReads kReads = GradReads::kOutput;
  static constexpr bool kInt64 = false;
  // max(x, 0) keeping x when it is NaN or -0 (std::max returns its first argument unless the
  // second is greater), the same on both backends.
  AUTODIST_HOST_DEVICE static float Forward(float x) {
#ifdef __CUDA_ARCH__
    return 0.0F > x ? 0.0F : x;
#else
    return std::max(x, 0.0F);  // vectorizes (maxps)
#endif
  }
  AUTODIST_HOST_DEVICE static float Grad(float dy, float y) { return y > 0.0F ? dy : 0.0F; }
};

}  // namespace autodist::ops
