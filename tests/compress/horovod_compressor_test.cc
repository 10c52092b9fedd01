// HorovodCompressor: the float16-rounded sum, exactly and within the float16 error bound;
// overflow to infinity. HorovodCompressorEF: a 3-step sequence on 2 ranks computed by hand.
#include "runtime/compress/horovod_compressor.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

#include "runtime/tensor/float16.h"
#include "tests/compress/compress_test_util.h"
#include "tests/compress/thread_communicator.h"

namespace autodist::compress::testing {
namespace {

// What a float16 all-reduce of two ranks gives: each cast, then one float16 addition.
float HalfSum(float a, float b) {
#ifdef __FLT16_MAX__
  // The compiler's float16 as an independent oracle.
  return static_cast<float>(static_cast<_Float16>(static_cast<float>(static_cast<_Float16>(a)) +
                                                  static_cast<float>(static_cast<_Float16>(b))));
#else
  return tensor::HalfToFloat(tensor::FloatToHalf(tensor::HalfToFloat(tensor::FloatToHalf(a)) +
                                                 tensor::HalfToFloat(tensor::FloatToHalf(b))));
#endif
}

TEST(HorovodCompressorTest, ResultIsTheFloat16RoundedSum) {
  const std::vector<tensor::Shape> shapes = {{16, 8}, {8}};
  RunRanks(2, [&](ThreadCommunicator& comm) {
    const auto compressor = MakeCompressor({.kind = CompressorKind::kHorovod});
    std::vector<tensor::Tensor> tensors;
    std::array<std::vector<std::vector<float>>, 2> per_rank;
    for (size_t t = 0; t < shapes.size(); ++t) {
      const auto count = static_cast<size_t>(tensor::NumElements(shapes[t]));
      for (int r = 0; r < 2; ++r) per_rank[r].push_back(RandomValues(count, 7 * t + r, -4, 4));
      tensors.push_back(MakeTensor(shapes[t], per_rank[comm.rank()][t]));
    }
    compressor->Reduce("fp16", Group({"w", "b"}, tensors), comm, 0);
    EXPECT_EQ(comm.collectives(), 1);
    for (size_t t = 0; t < shapes.size(); ++t) {
      const std::vector<float> result = Values(tensors[t]);
      for (size_t i = 0; i < result.size(); ++i) {
        const float a = per_rank[0][t][i];
        const float b = per_rank[1][t][i];
        ASSERT_EQ(result[i], HalfSum(a, b)) << t << "/" << i;
        // Two casts and one addition, each off by at most 2^-11 relative.
        const double bound = 0x1p-11 * (std::fabs(a) + std::fabs(b)) * (2 + 0x1p-11);
        ASSERT_LE(std::fabs(double(result[i]) - (double(a) + double(b))), bound);
      }
    }
    EXPECT_EQ(compressor->stats().raw_bytes, 136 * 4);
    EXPECT_EQ(compressor->stats().wire_bytes, 136 * 2);
    EXPECT_EQ(compressor->stats().ratio(), 2.0);
  });
}

TEST(HorovodCompressorTest, ErrorStaysWithinTheFloat16BoundOnFourRanks) {
  RunRanks(4, [](ThreadCommunicator& comm) {
    const auto compressor = MakeCompressor({.kind = CompressorKind::kHorovod});
    tensor::Tensor gradient = MakeTensor({1000}, RandomValues(1000, 100 + comm.rank(), 0.5F, 2));
    compressor->Reduce("fp16", {{"w", &gradient}}, comm, 0);
    for (int64_t i = 0; i < 1000; ++i) {
      double exact = 0;
      for (int r = 0; r < 4; ++r) exact += RandomValues(1000, 100 + r, 0.5F, 2)[size_t(i)];
      // Positive addends: 4 casts and 3 additions, each within 2^-11 of the running sum.
      ASSERT_LE(std::fabs(gradient.GetAsDouble(i) - exact), exact * 7 * 0x1p-11 * 1.01);
    }
  });
}

TEST(HorovodCompressorTest, OverflowBecomesInfinity) {
  RunRanks(2, [](ThreadCommunicator& comm) {
    const auto compressor = MakeCompressor({.kind = CompressorKind::kHorovodEF});
    // 40000 + 40000 overflows the float16 sum; 70000 overflows its own cast.
    tensor::Tensor gradient = MakeTensor({3}, {40000, comm.rank() == 0 ? 70000.0F : 0.0F, 1});
    compressor->Reduce("fp16", {{"w", &gradient}}, comm, 0);
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(Values(gradient), (std::vector<float>{inf, inf, 2}));
    // No residual from an overflowed cast: a later step is not poisoned by -inf.
    const auto& horovod = dynamic_cast<const HorovodCompressor&>(*compressor);
    EXPECT_EQ(*horovod.residual("w"), (std::vector<float>{0, 0, 0}));
  });
}

// Two ranks, two one-element tensors, the same gradients for 3 steps. Near 1 float16's spacing
// is 2^-10, so 1 + 2^-12 rounds down and its 2^-12 must wait in the residual.
//   rank 0: a = 1 + 2^-12,   b = 1 + 3*2^-12      rank 1: a = 0.5, b = -0.25 (exact halves)
// rank 0, a: step 0: g' = 1 + 2^-12   -> half 1          residual  2^-12
//            step 1: g' = 1 + 2*2^-12 -> tie, to even 1  residual  2^-11
//            step 2: g' = 1 + 3*2^-12 -> 1 + 2^-10       residual -2^-12
// rank 0, b: step 0: g' = 1 + 3*2^-12 -> 1 + 2^-10       residual -2^-12
//            step 1: g' = 1 + 2*2^-12 -> tie, to even 1  residual  2^-11
//            step 2: g' = 1 + 5*2^-12 -> 1 + 2^-10       residual  2^-12
// Sums (exact in float16: spacing 2^-10 in [1, 2), 2^-11 in [0.5, 1)):
//   a: 1.5, 1.5, 1.5 + 2^-10 = 1.5009765625     b: 0.75 + 2^-10 = 0.7509765625, 0.75, same
// Without error feedback every step sends 1 and 1 + 2^-10: a stays 1.5, b 0.7509765625.
TEST(HorovodCompressorEFTest, HandComputedThreeSteps) {
  const std::vector<std::vector<float>> expected_a = {{1.5F}, {1.5F}, {1.5009765625F}};
  const std::vector<std::vector<float>> expected_b = {{0.7509765625F}, {0.75F}, {0.7509765625F}};
  const std::vector<float> residual_a = {0.000244140625F, 0.00048828125F, -0.000244140625F};
  const std::vector<float> residual_b = {-0.000244140625F, 0.00048828125F, 0.000244140625F};
  RunRanks(2, [&](ThreadCommunicator& comm) {
    const auto compressor = MakeCompressor({.kind = CompressorKind::kHorovodEF});
    const auto& ef = dynamic_cast<const HorovodCompressor&>(*compressor);
    const bool first = comm.rank() == 0;
    float sent_a = 0;
    for (int64_t step = 0; step < 3; ++step) {
      std::vector<tensor::Tensor> tensors = {MakeTensor({1}, {first ? 1.000244140625F : 0.5F}),
                                             MakeTensor({1}, {first ? 1.000732421875F : -0.25F})};
      compressor->Reduce("ef", Group({"a", "b"}, tensors), comm, step);
      EXPECT_EQ(Values(tensors[0]), expected_a[step]) << "step " << step;
      EXPECT_EQ(Values(tensors[1]), expected_b[step]) << "step " << step;
      EXPECT_EQ(*ef.residual("a"), (std::vector<float>{first ? residual_a[step] : 0.0F}));
      EXPECT_EQ(*ef.residual("b"), (std::vector<float>{first ? residual_b[step] : 0.0F}));
      sent_a += tensors[0].data<float>()[0];
    }
    // What was sent plus what still waits is everything: 3 (1.5 + 2^-12) = 4.5 + 4 * 2^-12 -
    // rank 0's residual -2^-12.
    EXPECT_EQ(sent_a, 4.5009765625F);
  });
}

TEST(HorovodCompressorEFTest, WithoutErrorFeedbackTheRoundingErrorIsLost) {
  RunRanks(2, [](ThreadCommunicator& comm) {
    const auto compressor = MakeCompressor({.kind = CompressorKind::kHorovod});
    const bool first = comm.rank() == 0;
    for (int64_t step = 0; step < 3; ++step) {
      std::vector<tensor::Tensor> tensors = {MakeTensor({1}, {first ? 1.000244140625F : 0.5F}),
                                             MakeTensor({1}, {first ? 1.000732421875F : -0.25F})};
      compressor->Reduce("plain", Group({"a", "b"}, tensors), comm, step);
      EXPECT_EQ(Values(tensors[0]), (std::vector<float>{1.5F}));
      EXPECT_EQ(Values(tensors[1]), (std::vector<float>{0.7509765625F}));
    }
    EXPECT_EQ(dynamic_cast<const HorovodCompressor&>(*compressor).residual("a"), nullptr);
  });
}

}  // namespace
}  // namespace autodist::compress::testing
