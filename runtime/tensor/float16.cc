#include "runtime/tensor/float16.h"

#include <cpuid.h>
#include <immintrin.h>

#include <bit>
#include <cmath>

namespace autodist::tensor {
namespace {

constexpr uint32_t kFloatAbsMask = 0x7fffffffU;
constexpr uint32_t kFloatInf = 0x7f800000U;
constexpr uint32_t kHalfOverflow = 0x477ff000U;   // 65520.0F: rounds up to 2^16, i.e. inf
constexpr uint32_t kHalfMinNormal = 0x38800000U;  // 2^-14
constexpr uint32_t kHalfUnderflow = 0x33000000U;  // 2^-25: ties to even down to zero
constexpr uint16_t kHalfInf = 0x7c00U;

// Drops the low `shift` bits of `bits`, rounding to nearest with ties to the even result.
uint32_t ShiftRoundEven(uint32_t bits, int shift) {
  const uint32_t kept = bits >> shift;
  const uint32_t dropped = bits & ((1U << shift) - 1U);
  const uint32_t half_way = 1U << (shift - 1);
  return kept + ((dropped > half_way || (dropped == half_way && (kept & 1U) != 0)) ? 1U : 0U);
}

}  // namespace

uint16_t FloatToHalf(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000U);
  const uint32_t abs = bits & kFloatAbsMask;
  if (abs > kFloatInf) {
    // NaN: keep it quiet and keep what fits of the payload.
    return static_cast<uint16_t>(sign | kHalfInf | 0x0200U | ((abs >> 13) & 0x03ffU));
  }
  if (abs >= kHalfOverflow) return static_cast<uint16_t>(sign | kHalfInf);  // inf included
  if (abs >= kHalfMinNormal) {
    // Rebias the exponent (127 -> 15) and round the mantissa from 23 to 10 bits; a carry out of
    // the mantissa correctly bumps the exponent.
    return static_cast<uint16_t>(sign | ShiftRoundEven(abs - (112U << 23), 13));
  }
  if (abs <= kHalfUnderflow) return sign;
  // Subnormal half: value / 2^-24 with the implicit leading bit made explicit. A result of 0x400
  // is the smallest normal half, which is its correct encoding too.
  const uint32_t exponent = abs >> 23;
  const uint32_t mantissa = (abs & 0x007fffffU) | 0x00800000U;
  return static_cast<uint16_t>(sign | ShiftRoundEven(mantissa, static_cast<int>(126 - exponent)));
}

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000U) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fU;
  uint32_t mantissa = half & 0x03ffU;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | kFloatInf | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112U) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalize into a float32 exponent.
  uint32_t float_exponent = 113;  // 2^-14 biased by 127
  while ((mantissa & 0x0400U) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return std::bit_cast<float>(sign | (float_exponent << 23) | ((mantissa & 0x03ffU) << 13));
}

namespace {

// F16C converts 8 values per instruction with IEEE round-to-nearest-even, overflow to infinity
// and quiet NaNs — the same results as FloatToHalf/HalfToFloat (tests/tensor/float16_test.cc
// compares them bit for bit), at a fraction of the cost. Chosen at run time, so binaries still
// run on CPUs without it.
bool HasF16c() {
  // F16C from CPUID (leaf 1, ECX): clang's __builtin_cpu_supports does not know "f16c". AVX from
  // the compiler's test, which also checks that the OS saves the AVX registers.
  static const bool has = [] {
    unsigned int eax = 0;
    unsigned int ebx = 0;
    unsigned int ecx = 0;
    unsigned int edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0 &&
           __builtin_cpu_supports("avx") != 0;
  }();
  return has;
}

__attribute__((target("avx,f16c"))) size_t FloatsToHalvesF16c(const float* in, size_t count,
                                                              uint16_t* out) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i halves = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), halves);
  }
  return i;
}

__attribute__((target("avx,f16c"))) size_t HalvesToFloatsF16c(const uint16_t* in, size_t count,
                                                              float* out) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(halves));
  }
  return i;
}

}  // namespace

void FloatsToHalves(const float* in, size_t count, uint16_t* out) {
  size_t i = HasF16c() ? FloatsToHalvesF16c(in, count, out) : 0;
  for (; i < count; ++i) out[i] = FloatToHalf(in[i]);
}

void HalvesToFloats(const uint16_t* in, size_t count, float* out) {
  size_t i = HasF16c() ? HalvesToFloatsF16c(in, count, out) : 0;
  for (; i < count; ++i) out[i] = HalfToFloat(in[i]);
}

void AddHalves(uint16_t* sum, const uint16_t* addend, size_t count) {
  // Rounding the float32 sum to half equals rounding the exact sum once: float32 carries
  // 24 >= 2 * 11 + 2 significant bits, the bound under which double rounding of a sum is
  // innocuous (Figueroa, 1995).
  for (size_t i = 0; i < count; ++i)
    sum[i] = FloatToHalf(HalfToFloat(sum[i]) + HalfToFloat(addend[i]));
}

}  // namespace autodist::tensor
