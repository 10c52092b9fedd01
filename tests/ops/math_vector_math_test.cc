#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/ops/math/vector_math.h"

namespace autodist::ops::vec {
namespace {

// Distance in units in the last place between two floats of the same sign (or both zero).
int64_t UlpDistance(float a, float b) {
  if (a == b) return 0;
  const auto ordered = [](float v) {
    const auto bits = static_cast<int64_t>(std::bit_cast<int32_t>(v));
    return bits < 0 ? std::numeric_limits<int32_t>::min() - bits : bits;
  };
  return std::abs(ordered(a) - ordered(b));
}

// Every 97th float bit pattern between `low` and `high` (both signs handled by the caller).
std::vector<float> Sweep(float low, float high) {
  std::vector<float> out;
  for (float v = low; v < high;) {
    out.push_back(v);
    const int32_t bits = std::bit_cast<int32_t>(v);
    const float next = std::bit_cast<float>(v >= 0 ? bits + 97 : bits - 97);
    v = next > v ? next : high;
  }
  return out;
}

TEST(VectorMathTest, ExpIsWithinOneUlpEverywhere) {
  int64_t worst = 0;
  for (const float x : Sweep(-104.0F, -1e-30F)) {
    worst = std::max(worst, UlpDistance(Exp(x), static_cast<float>(std::exp(double{x}))));
  }
  for (const float x : Sweep(1e-30F, 89.0F)) {
    worst = std::max(worst, UlpDistance(Exp(x), static_cast<float>(std::exp(double{x}))));
  }
  EXPECT_LE(worst, 1);
}

TEST(VectorMathTest, ExpSpecialValues) {
  EXPECT_EQ(Exp(0.0F), 1.0F);
  EXPECT_EQ(Exp(-0.0F), 1.0F);
  EXPECT_EQ(Exp(89.0F), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Exp(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Exp(-std::numeric_limits<float>::infinity()), 0.0F);
  EXPECT_EQ(Exp(-200.0F), 0.0F);
  EXPECT_TRUE(std::isnan(Exp(std::numeric_limits<float>::quiet_NaN())));
  // A subnormal result: e^-100 = 3.72e-44.
  EXPECT_LE(UlpDistance(Exp(-100.0F), static_cast<float>(std::exp(-100.0))), 1);
  // The largest finite result.
  EXPECT_LE(UlpDistance(Exp(88.7F), static_cast<float>(std::exp(double{88.7F}))), 1);
}

TEST(VectorMathTest, TanhIsWithinOneUlp) {
  int64_t worst = 0;
  for (const float x : Sweep(1e-30F, 12.0F)) {
    const auto expected = static_cast<float>(std::tanh(double{x}));
    worst = std::max(worst, UlpDistance(Tanh(x), expected));
    worst = std::max(worst, UlpDistance(Tanh(-x), -expected));
  }
  EXPECT_LE(worst, 1);
}

TEST(VectorMathTest, TanhSpecialValues) {
  EXPECT_EQ(Tanh(0.0F), 0.0F);
  EXPECT_EQ(Tanh(50.0F), 1.0F);
  EXPECT_EQ(Tanh(-50.0F), -1.0F);
  EXPECT_EQ(Tanh(std::numeric_limits<float>::infinity()), 1.0F);
  EXPECT_EQ(Tanh(-std::numeric_limits<float>::infinity()), -1.0F);
  EXPECT_TRUE(std::isnan(Tanh(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace autodist::ops::vec
