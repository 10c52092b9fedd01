// Internal: the float32 arithmetic of the optimizers' update rules, written once for the CPU loops
// (elementwise_optimizer.h) and the CUDA kernels (gpu/optim/), so that both backends round the
// same way: every function here compiles for host and device.
#pragma once

#include "runtime/common/host_device.h"
#include "runtime/ops/math/vector_math.h"

namespace autodist::optim::detail {

// a * b + c rounded once, as torch's AVX2/AVX512 kernels compute `x.add_(y, alpha=a)` and
// `addcmul_` (vec::fmadd, and fused multiply-adds the compiler forms): checked against
// PyTorch 1.13 at development time. On the device this is the hardware FMA. On the host the
// product of two floats is exact in double, so the double sum rounded to float matches an FMA
// except when it lands exactly halfway between two floats (vanishingly rare), and needs no FMA
// instruction in our portable build.
AUTODIST_HOST_DEVICE inline float Fma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b) +
                            static_cast<double>(c));
#endif
}

// The correctly rounded square root, shared with the op kernels.
using ops::vec::Sqrt;

// torch.maximum: NaN if either is NaN.
AUTODIST_HOST_DEVICE inline float Maximum(float a, float b) {
  if (a != a || b != b) return a + b;  // NOLINT(misc-redundant-expression): the NaN test
  return a > b ? a : b;
}

// The compile-time flags of one variant of a rule (weight decay on or off, and so on): loops and
// kernels are instantiated once per variant, free of branches.
template <bool... kFlags>
struct Flags {};

// Calls body(Flags<b1, b2, ...>{}) with the runtime flags as template arguments.
template <bool... kFixed, typename Body>
void DispatchFlags(Body&& body) {
  body(Flags<kFixed...>{});
}
template <bool... kFixed, typename Body, typename... Rest>
void DispatchFlags(Body&& body, bool flag, Rest... rest) {
  if (flag) {
    DispatchFlags<kFixed..., true>(body, rest...);
  } else {
    DispatchFlags<kFixed..., false>(body, rest...);
  }
}

}  // namespace autodist::optim::detail
