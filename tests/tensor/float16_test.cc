// float32 <-> float16 conversions: exact values at the edges of the format, ties to even,
// overflow, subnormals, NaN, agreement with the compiler's own _Float16 cast, and the cast with
// error feedback.
#include "runtime/tensor/float16.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace autodist::tensor {
namespace {

TEST(Float16Test, ExactValuesRoundTrip) {
  for (const float value : {0.0F, 1.0F, -2.0F, 0.5F, 65504.0F, -65504.0F, 0x1p-14F, 0x1p-24F,
                            1.0F + 0x1p-10F, 3.140625F}) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(value)), value) << value;
  }
  EXPECT_EQ(FloatToHalf(1.0F), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0F), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0F), 0x7bff);
  EXPECT_EQ(FloatToHalf(0x1p-24F), 0x0001);  // the smallest subnormal
  EXPECT_EQ(FloatToHalf(-0.0F), 0x8000);
}

TEST(Float16Test, EveryHalfSurvivesTheRoundTrip) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    const float value = HalfToFloat(half);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(value)))) << bits;
      continue;
    }
    EXPECT_EQ(FloatToHalf(value), half) << bits;
  }
}

TEST(Float16Test, RoundsToNearestTiesToEven) {
  // Near 1 the half spacing is 2^-10.
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0F + 0x1p-12F)), 1.0F);                 // below the tie
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0F + 0x1p-11F)), 1.0F);                 // tie: to even 1
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0F + 3 * 0x1p-11F)), 1.0F + 0x1p-9F);   // tie: to even
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0F + 3 * 0x1p-12F)), 1.0F + 0x1p-10F);  // above the tie
  // A carry out of the mantissa moves to the next binade.
  EXPECT_EQ(HalfToFloat(FloatToHalf(2.0F - 0x1p-12F)), 2.0F);
}

TEST(Float16Test, OverflowsToInfinityLikeACast) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(HalfToFloat(FloatToHalf(65519.996F)), 65504.0F);  // below the midpoint
  EXPECT_EQ(HalfToFloat(FloatToHalf(65520.0F)), inf);         // the midpoint ties up to 2^16
  EXPECT_EQ(HalfToFloat(FloatToHalf(1e10F)), inf);
  EXPECT_EQ(HalfToFloat(FloatToHalf(-1e10F)), -inf);
  EXPECT_EQ(HalfToFloat(FloatToHalf(inf)), inf);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Float16Test, UnderflowsThroughSubnormals) {
  EXPECT_EQ(HalfToFloat(FloatToHalf(0x1p-25F)), 0.0F);  // tie between 0 and 2^-24: to even 0
  EXPECT_EQ(HalfToFloat(FloatToHalf(0x1.000002p-25F)), 0x1p-24F);
  EXPECT_EQ(HalfToFloat(FloatToHalf(3 * 0x1p-25F)), 2 * 0x1p-24F);  // tie: to even 2
  EXPECT_EQ(HalfToFloat(FloatToHalf(1e-30F)), 0.0F);
  EXPECT_TRUE(std::signbit(HalfToFloat(FloatToHalf(-1e-30F))));
  // 1023.5 units of 2^-24: ties to even 1024, the smallest normal.
  EXPECT_EQ(HalfToFloat(FloatToHalf(0x1.ffcp-15F)), 0x1p-14F);
}

TEST(Float16Test, AddHalvesRoundsOnce) {
  std::array<uint16_t, 2> sum = {FloatToHalf(2048.0F), FloatToHalf(1.0F)};
  const std::array<uint16_t, 2> addend = {FloatToHalf(1.0F), FloatToHalf(0x1p-11F)};
  AddHalves(sum.data(), addend.data(), 2);
  EXPECT_EQ(HalfToFloat(sum[0]), 2048.0F);  // 2049 is a tie between 2048 and 2050
  EXPECT_EQ(HalfToFloat(sum[1]), 1.0F);     // 1 + 2^-11 ties to 1
}

#ifdef __FLT16_MAX__
// The compiler's cast (GCC and Clang on x86-64 and ARM implement IEEE rounding) as the oracle,
// over a spread of float32 bit patterns covering every exponent.
TEST(Float16Test, AgreesWithTheCompilersCast) {
  for (uint64_t bits = 0; bits <= 0xffffffffULL; bits += 9973) {
    const float value = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const auto reference = static_cast<_Float16>(value);
    uint16_t expected;
    std::memcpy(&expected, &reference, sizeof(expected));
    if (std::isnan(value)) continue;
    ASSERT_EQ(FloatToHalf(value), expected) << std::hexfloat << value;
    ASSERT_EQ(std::bit_cast<uint32_t>(HalfToFloat(expected)),
              std::bit_cast<uint32_t>(static_cast<float>(reference)));
  }
}
#endif

// The bulk conversions (F16C where the CPU has it) give the scalar conversions' bits.
TEST(Float16Test, BulkConversionsMatchTheScalarOnes) {
  std::vector<float> floats;
  for (uint64_t bits = 0; bits <= 0xffffffffULL; bits += 65521) {
    const auto value = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (!std::isnan(value)) floats.push_back(value);
  }
  floats.insert(floats.end(), {65519.0F, 65520.0F, -65520.0F, 1e-8F, -0.0F});
  std::vector<uint16_t> halves(floats.size());
  FloatsToHalves(floats.data(), floats.size(), halves.data());
  for (size_t i = 0; i < floats.size(); ++i) {
    ASSERT_EQ(halves[i], FloatToHalf(floats[i])) << floats[i];
  }
  std::vector<uint16_t> every(65536);
  for (size_t i = 0; i < every.size(); ++i) every[i] = static_cast<uint16_t>(i);
  std::vector<float> back(every.size());
  HalvesToFloats(every.data(), every.size(), back.data());
  for (size_t i = 0; i < every.size(); ++i) {
    const float expected = HalfToFloat(every[i]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(back[i])) << i;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(expected)) << i;
    }
  }
}

}  // namespace
}  // namespace autodist::tensor
