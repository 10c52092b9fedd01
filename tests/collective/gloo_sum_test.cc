// The element-wise sums behind the Gloo communicator's reductions: every type, lengths that are
// not a multiple of the vector width, the output aliasing an input, and float16 rounding that
// matches Gloo's own conversion bit for bit (the F16C path and the scalar one must agree).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/collective/gloo/sum.h"
#include "tests/collective/gloo_test_util.h"

namespace autodist::collective::gloo_detail {
namespace {

TEST(GlooSumTest, Float32AndInt64InPlaceWithTails) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{1003}}) {
    std::vector<float> a(count);
    std::vector<float> b(count);
    std::vector<int64_t> c(count);
    std::vector<int64_t> d(count);
    for (size_t i = 0; i < count; ++i) {
      a[i] = 0.5F * static_cast<float>(i);
      b[i] = 3.0F;
      c[i] = (int64_t{1} << 40) + static_cast<int64_t>(i);
      d[i] = -static_cast<int64_t>(2 * i);
    }
    SumFor(ElementType::kFloat32)(a.data(), a.data(), b.data(), count);
    SumFor(ElementType::kInt64)(c.data(), c.data(), d.data(), count);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(a[i], 0.5F * static_cast<float>(i) + 3.0F) << i << " of " << count;
      ASSERT_EQ(c[i], (int64_t{1} << 40) - static_cast<int64_t>(i)) << i << " of " << count;
    }
  }
}

TEST(GlooSumTest, Float16RoundsLikeGloo) {
  std::mt19937 engine(7);
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  std::uniform_int_distribution<int> exponent(-20, 15);
  constexpr size_t kCount = 1003;  // a tail after the last group of eight
  std::vector<uint16_t> a(kCount);
  std::vector<uint16_t> b(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    a[i] = testing::Half(std::ldexp(uniform(engine), exponent(engine)));
    b[i] = testing::Half(std::ldexp(uniform(engine), exponent(engine)));
  }
  std::vector<uint16_t> out(kCount);
  SumFor(ElementType::kFloat16)(out.data(), a.data(), b.data(), kCount);
  for (size_t i = 0; i < kCount; ++i) {
    const uint16_t expected = testing::Half(testing::FromHalf(a[i]) + testing::FromHalf(b[i]));
    ASSERT_EQ(out[i], expected) << "element " << i << ": " << testing::FromHalf(a[i]) << " + "
                                << testing::FromHalf(b[i]);
  }
}

}  // namespace
}  // namespace autodist::collective::gloo_detail
