#include "runtime/collective/gloo/sum.h"

#include <gloo/types.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cstdint>
#include <cstring>

namespace autodist::collective::gloo_detail {
namespace {

// Vector types of the compiler's vector extension: portable, and vectorized at -O2 where plain
// loops are not (GCC's cheap cost model does not vectorize loops of unknown length).
using Float32x8 = float __attribute__((vector_size(32)));
using Int64x4 = int64_t __attribute__((vector_size(32)));

template <typename T, typename Vec>
void SumLanes(void* out, const void* a, const void* b, size_t count) {
  constexpr size_t kLanes = sizeof(Vec) / sizeof(T);
  auto* o = static_cast<char*>(out);
  const auto* x = static_cast<const char*>(a);
  const auto* y = static_cast<const char*>(b);
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    Vec u;
    Vec v;
    // memcpy: the buffers carry no alignment guarantee (Gloo hands out offsets into them).
    std::memcpy(&u, x + i * sizeof(T), sizeof(u));
    std::memcpy(&v, y + i * sizeof(T), sizeof(v));
    u += v;
    std::memcpy(o + i * sizeof(T), &u, sizeof(u));
  }
  for (; i < count; ++i) {
    T u;
    T v;
    std::memcpy(&u, x + i * sizeof(T), sizeof(T));
    std::memcpy(&v, y + i * sizeof(T), sizeof(T));
    u += v;
    std::memcpy(o + i * sizeof(T), &u, sizeof(T));
  }
}

void SumHalfScalar(void* out, const void* a, const void* b, size_t from, size_t count) {
  auto* o = static_cast<gloo::float16*>(out);
  const auto* x = static_cast<const gloo::float16*>(a);
  const auto* y = static_cast<const gloo::float16*>(b);
  for (size_t i = from; i < count; ++i) {
    o[i] = gloo::cpu_float2half_rn(gloo::cpu_half2float(x[i]) + gloo::cpu_half2float(y[i]));
  }
}

#if defined(__x86_64__)
// Eight halves at a time through the F16C conversions; rounding is to nearest even, the same as
// gloo::cpu_float2half_rn, so both paths give identical bits.
__attribute__((target("avx,f16c"))) void SumHalfF16c(void* out, const void* a, const void* b,
                                                     size_t count) {
  auto* o = static_cast<char*>(out);
  const auto* x = static_cast<const char*>(a);
  const auto* y = static_cast<const char*>(b);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 u = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * i)));
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + 2 * i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 2 * i),
                     _mm256_cvtps_ph(_mm256_add_ps(u, v), _MM_FROUND_TO_NEAREST_INT));
  }
  SumHalfScalar(out, a, b, i, count);
}

// Asks for AVX2 as a proxy: every CPU with AVX2 has F16C (which came earlier), and Clang cannot
// ask for F16C by name.
bool HasF16c() { return __builtin_cpu_supports("avx2") != 0; }
#endif

void SumHalf(void* out, const void* a, const void* b, size_t count) {
  SumHalfScalar(out, a, b, 0, count);
}

}  // namespace

SumFunction SumFor(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return &SumLanes<float, Float32x8>;
    case ElementType::kInt64:
      return &SumLanes<int64_t, Int64x4>;
    case ElementType::kFloat16:
#if defined(__x86_64__)
      if (HasF16c()) return &SumHalfF16c;
#endif
      return &SumHalf;
  }
  return nullptr;  // unreachable: every enumerator is handled above
}

}  // namespace autodist::collective::gloo_detail
