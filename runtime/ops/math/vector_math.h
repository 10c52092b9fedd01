// exp and tanh for float32 written so that the compiler vectorizes them inside `#pragma omp simd`
// loops (the C library's expf/tanhf are opaque calls, which keeps every loop that uses them
// scalar and several times slower than PyTorch's vectorized versions). Both are branch-free:
// every path is computed and the result selected, so the loops stay straight-line code. They
// compile for the GPU as well (AUTODIST_HOST_DEVICE), where the same operations give the same
// bits (gpu/ops is built without FMA contraction, like this code).
//
// Accuracy: both stay within 1 ulp of the correctly rounded result (found by comparing every
// 7th float against double precision; tests/ops/math_vector_math_test.cc keeps a sparser sweep),
// exp including subnormal results, overflow to +inf and NaN. These are the classic Cephes range
// reductions and polynomials (public formulas).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "runtime/common/host_device.h"

namespace autodist::ops::vec {

AUTODIST_HOST_DEVICE inline int32_t FloatBits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_int(x);
#else
  return std::bit_cast<int32_t>(x);
#endif
}

AUTODIST_HOST_DEVICE inline float BitsFloat(int32_t bits) {
#ifdef __CUDA_ARCH__
  return __int_as_float(bits);
#else
  return std::bit_cast<float>(bits);
#endif
}

// The correctly rounded square root, on both backends (IEEE on the device too, unless fast math
// is asked for, and our CUDA build does not ask).
AUTODIST_HOST_DEVICE inline float Sqrt(float x) {
#ifdef __CUDA_ARCH__
  return sqrtf(x);
#else
  return std::sqrt(x);
#endif
}

// condition ? if_true : if_false as bit operations on a mask. GCC turns a conditional whose
// sides are floating-point values into control flow, and with IEEE exception semantics
// (-ftrapping-math, the default) it then refuses to vectorize the loop; a mask select is
// straight-line code.
AUTODIST_HOST_DEVICE inline float Select(bool condition, float if_true, float if_false) {
  const int32_t mask = -static_cast<int32_t>(condition);
  return BitsFloat((FloatBits(if_true) & mask) | (FloatBits(if_false) & ~mask));
}

// e^x.
AUTODIST_HOST_DEVICE inline float Exp(float x) {
  // Beyond these, e^x is +inf or rounds to 0 in float; clamping keeps 2^n in range below.
  constexpr float kMax = 88.8F;
  constexpr float kMin = -104.0F;
  constexpr float kLog2e = 1.44269504088896341F;
  // ln 2 split so that n * kLn2Hi is exact for |n| <= 2^9.
  constexpr float kLn2Hi = 0.693359375F;
  constexpr float kLn2Lo = -2.12194440e-4F;
  // Adding and subtracting 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer.
  constexpr float kRound = 12582912.0F;
  // NaN clamps to kMax (comparisons with NaN are false), so the integer conversion below stays
  // defined; the NaN is put back at the end.
  float c = Select(x < kMax, x, kMax);
  c = Select(c > kMin, c, kMin);
  const float n = (c * kLog2e + kRound) - kRound;
  const float r = (c - n * kLn2Hi) - n * kLn2Lo;  // |r| <= ln(2) / 2
  const float r2 = r * r;
  float p = 1.9875691500e-4F;
  p = p * r + 1.3981999507e-3F;
  p = p * r + 8.3334519073e-3F;
  p = p * r + 4.1665795894e-2F;
  p = p * r + 1.6666665459e-1F;
  p = p * r + 5.0000001201e-1F;
  p = p * r2 + r + 1.0F;
  // 2^n as two normal powers of two, so that results down to the subnormal range and up to
  // overflow come out of plain multiplications.
  const auto ni = static_cast<int32_t>(n);
  const int32_t half = ni >> 1;
  const float s1 = BitsFloat((half + 127) << 23);
  const float s2 = BitsFloat((ni - half + 127) << 23);
  return Select(x == x, p * s1 * s2, x);
}

// tanh(x).
AUTODIST_HOST_DEVICE inline float Tanh(float x) {
#ifdef __CUDA_ARCH__
  const float a = fabsf(x);
#else
  const float a = std::fabs(x);
#endif
  // |x| < 0.625: odd polynomial, free of the cancellation the exp form has near 0.
  const float z = x * x;
  float p = -5.70498872745e-3F;
  p = p * z + 2.06390887954e-2F;
  p = p * z - 5.37397155531e-2F;
  p = p * z + 1.33314422036e-1F;
  p = p * z - 3.33332819422e-1F;
  const float small = p * z * x + x;
  // Otherwise 1 - 2 / (e^(2|x|) + 1) with the sign of x (e^(2|x|) = inf gives exactly 1).
  const float e = Exp(2.0F * a);
#ifdef __CUDA_ARCH__
  const float large = copysignf(1.0F - 2.0F / (e + 1.0F), x);
#else
  const float large = std::copysign(1.0F - 2.0F / (e + 1.0F), x);
#endif
  return Select(a < 0.625F, small, large);
}

}  // namespace autodist::ops::vec
