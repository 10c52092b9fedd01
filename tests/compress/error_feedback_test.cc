#include "runtime/compress/error_feedback.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/tensor/float16.h"

namespace autodist::compress {
namespace {

using tensor::HalfToFloat;

// g' = g + e, sent half(g'), e = g' - float(half(g')): 1 + 2^-12 rounds to 1 (spacing 2^-10),
// and its 2^-12 accumulates until the third step sends 1 + 2^-10, one step's error ahead.
TEST(ErrorFeedbackTest, Float16ErrorFeedbackCarriesTheRoundingError) {
  const std::vector<float> gradient = {1.0F + 0x1p-12F, 3.0F, 70000.0F};
  std::vector<float> residual(3, 0.0F);
  std::vector<uint16_t> sent(3);
  FloatsToHalvesWithFeedback(gradient.data(), 3, residual.data(), sent.data());
  EXPECT_EQ(HalfToFloat(sent[0]), 1.0F);
  EXPECT_EQ(residual[0], 0x1p-12F);
  EXPECT_EQ(HalfToFloat(sent[1]), 3.0F);
  EXPECT_EQ(residual[1], 0.0F);
  EXPECT_TRUE(std::isinf(HalfToFloat(sent[2])));
  EXPECT_EQ(residual[2], 0.0F);  // overflow: no residual, rather than -inf
  FloatsToHalvesWithFeedback(gradient.data(), 3, residual.data(), sent.data());
  EXPECT_EQ(HalfToFloat(sent[0]), 1.0F);  // 1 + 2^-11 is the tie, to even 1
  EXPECT_EQ(residual[0], 0x1p-11F);
  FloatsToHalvesWithFeedback(gradient.data(), 3, residual.data(), sent.data());
  EXPECT_EQ(HalfToFloat(sent[0]), 1.0F + 0x1p-10F);  // 1 + 3 * 2^-12 rounds up
  EXPECT_EQ(residual[0], -0x1p-12F);
}

// g' = e + g; the two largest |g'| are sent, in ascending index order, and leave zeros in the
// residual; the rest waits. Fed again, an entry that was left out grows until it is picked.
TEST(ErrorFeedbackTest, TopKSendsTheLargestAndKeepsTheRest) {
  const std::vector<float> gradient = {0.5F, -4.0F, 1.0F, 2.0F};
  std::vector<float> residual = {0.0F, 0.0F, 0.75F, 0.0F};
  std::vector<int64_t> indices;
  std::vector<float> picked;
  TakeLargestWithFeedback(gradient.data(), 4, residual.data(), 2, indices, picked);
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(picked, (std::vector<float>{-4.0F, 2.0F}));
  EXPECT_EQ(residual, (std::vector<float>{0.5F, 0.0F, 1.75F, 0.0F}));

  TakeLargestWithFeedback(gradient.data(), 4, residual.data(), 2, indices, picked);
  EXPECT_EQ(indices, (std::vector<int64_t>{1, 2}));  // 2.75 now beats 2
  EXPECT_EQ(picked, (std::vector<float>{-4.0F, 2.75F}));
  EXPECT_EQ(residual, (std::vector<float>{1.0F, 0.0F, 0.0F, 2.0F}));
}

// k = 0 sends nothing and keeps everything; k = count sends everything and keeps nothing.
TEST(ErrorFeedbackTest, TopKBounds) {
  const std::vector<float> gradient = {1.0F, 2.0F};
  std::vector<float> residual(2, 0.0F);
  std::vector<int64_t> indices;
  std::vector<float> picked;
  TakeLargestWithFeedback(gradient.data(), 2, residual.data(), 0, indices, picked);
  EXPECT_TRUE(indices.empty());
  EXPECT_TRUE(picked.empty());
  EXPECT_EQ(residual, gradient);
  TakeLargestWithFeedback(gradient.data(), 2, residual.data(), 2, indices, picked);
  EXPECT_EQ(picked, (std::vector<float>{2.0F, 4.0F}));
  EXPECT_EQ(residual, (std::vector<float>{0.0F, 0.0F}));
}

}  // namespace
}  // namespace autodist::compress
