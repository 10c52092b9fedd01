// The per-element math of Add, Sub, Mul and Div and of their gradients, for the CPU kernel
// (arithmetic.cc) and the CUDA one (gpu/ops/) alike.
#pragma once

#include "runtime/common/host_device.h"

namespace autodist::ops {

enum class Arithmetic { kAdd, kSub, kMul, kDiv };

// fn(x, y) for one operation and element type.
template <Arithmetic kOp, typename T>
struct ArithmeticOp {
  AUTODIST_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (kOp == Arithmetic::kAdd) return x + y;
    if constexpr (kOp == Arithmetic::kSub) return x - y;
    if constexpr (kOp == Arithmetic::kMul) return x * y;
    if constexpr (kOp == Arithmetic::kDiv) return x / y;
  }
};

// The gradients' element-wise steps (a gradient of a broadcast operand is then summed back to
// its shape):
//   Mul: da = dy * b, db = dy * a;  Div: da = dy / b, db = -dy * ((a / b) / b) as PyTorch
//   computes it, with a / b = y.
struct TimesOp {
  AUTODIST_HOST_DEVICE float operator()(float g, float z) const { return g * z; }
};
struct OverOp {
  AUTODIST_HOST_DEVICE float operator()(float g, float z) const { return g / z; }
};
struct NegTimesOp {
  AUTODIST_HOST_DEVICE float operator()(float g, float q) const { return -g * q; }
};
struct NegateOp {
  AUTODIST_HOST_DEVICE float operator()(float v) const { return -v; }
};

}  // namespace autodist::ops
