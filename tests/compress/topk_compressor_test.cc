// TopKCompressorEF: the k largest magnitudes are sent, the rest waits in the residual and is
// sent eventually, contributions of all ranks are summed, ties and k are reproducible.
#include "runtime/compress/topk_compressor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/compress/compress_test_util.h"
#include "tests/compress/thread_communicator.h"

namespace autodist::compress::testing {
namespace {

CompressorOptions TopK(double fraction) {
  return {.kind = CompressorKind::kTopKEF, .fraction = fraction};
}

TEST(TopKCompressorEFTest, PicksTheLargestAndKeepsTheRest) {
  RunRanks(2, [](ThreadCommunicator& comm) {
    TopKCompressorEF compressor(TopK(0.25));  // k = ceil(0.25 * 8) = 2 over the fused group
    // The group fuses a (5 elements) and b (3): indices 0-4 are a, 5-7 are b.
    std::vector<tensor::Tensor> tensors;
    if (comm.rank() == 0) {
      tensors = {MakeTensor({5}, {0.1F, -5, 0.3F, 2, 0}), MakeTensor({3}, {1, -3, 0.5F})};
    } else {
      tensors = {MakeTensor({5}, {4, 0, 0, 0, 0.2F}), MakeTensor({3}, {0, 0, -7})};
    }
    compressor.Reduce("topk", Group({"a", "b"}, tensors), comm, 0);
    // Rank 0 sends -5 (index 1) and -3 (index 6); rank 1 sends 4 (index 0) and -7 (index 7).
    EXPECT_EQ(Values(tensors[0]), (std::vector<float>{4, -5, 0, 0, 0}));
    EXPECT_EQ(Values(tensors[1]), (std::vector<float>{0, -3, -7}));
    if (comm.rank() == 0) {
      EXPECT_EQ(*compressor.residual("a"), (std::vector<float>{0.1F, 0, 0.3F, 2, 0}));
      EXPECT_EQ(*compressor.residual("b"), (std::vector<float>{1, 0, 0.5F}));
    } else {
      EXPECT_EQ(*compressor.residual("a"), (std::vector<float>{0, 0, 0, 0, 0.2F}));
      EXPECT_EQ(*compressor.residual("b"), (std::vector<float>{0, 0, 0}));
    }
    EXPECT_EQ(comm.collectives(), 2);  // indices, values
    EXPECT_EQ(compressor.stats().raw_bytes, 8 * 4);
    EXPECT_EQ(compressor.stats().wire_bytes, 2 * 12);
  });
}

TEST(TopKCompressorEFTest, TheResidualIsAddedBackNextStep) {
  RunRanks(1, [](ThreadCommunicator& comm) {
    TopKCompressorEF compressor(TopK(0.5));  // k = 2 of 4
    tensor::Tensor g = MakeTensor({4}, {1, 2, 3, 4});
    compressor.Reduce("topk", {{"w", &g}}, comm, 0);
    EXPECT_EQ(Values(g), (std::vector<float>{0, 0, 3, 4}));
    // g' = {1, 2, 3, 4} + {1, 2, 0, 0} = {2, 4, 3, 4}: 4 and 4.
    g = MakeTensor({4}, {1, 2, 3, 4});
    compressor.Reduce("topk", {{"w", &g}}, comm, 1);
    EXPECT_EQ(Values(g), (std::vector<float>{0, 4, 0, 4}));
    EXPECT_EQ(*compressor.residual("w"), (std::vector<float>{2, 0, 3, 0}));
  });
}

TEST(TopKCompressorEFTest, EveryElementIsSentEventually) {
  constexpr int64_t kElements = 40;
  RunRanks(3, [](ThreadCommunicator& comm) {
    TopKCompressorEF compressor(TopK(0.1));  // k = 4
    EXPECT_EQ(compressor.PickCount(kElements), 4);
    const std::vector<float> given = RandomValues(kElements, 5 + uint64_t(comm.rank()));
    std::vector<float> received(kElements, 0.0F);
    for (int64_t step = 0; step < 10; ++step) {
      // One gradient at step 0, zeros afterwards: only the residual is left to send.
      tensor::Tensor g = step == 0 ? MakeTensor({4, 10}, given)
                                   : tensor::Tensor::Zeros(tensor::DType::kFloat32, {4, 10});
      compressor.Reduce("drain", {{"w", &g}}, comm, step);
      for (int64_t i = 0; i < kElements; ++i) received[size_t(i)] += g.data<float>()[i];
    }
    EXPECT_EQ(*compressor.residual("w"), std::vector<float>(kElements, 0.0F));
    std::vector<float> expected(kElements, 0.0F);
    for (int r = 0; r < 3; ++r) {
      const std::vector<float> values = RandomValues(kElements, 5 + uint64_t(r));
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += values[i];
    }
    for (size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(received[i], expected[i], 1e-6) << i;
  });
}

TEST(TopKCompressorEFTest, SumsOverlappingPicksOfAllRanks) {
  RunRanks(3, [](ThreadCommunicator& comm) {
    TopKCompressorEF compressor(TopK(0.5));  // k = 3 of 6
    const auto r = float(comm.rank());
    // Every rank's largest: index 2 (shared), then index r + 3 and index r.
    tensor::Tensor g = MakeTensor({6}, {0, 0, 100, 0, 0, 0});
    g.data<float>()[comm.rank() + 3] = 10 + r;
    g.data<float>()[comm.rank()] += 5 + r;  // rank 2 adds to the shared index
    compressor.Reduce("overlap", {{"w", &g}}, comm, 0);
    EXPECT_EQ(Values(g), (std::vector<float>{5, 6, 300 + 7, 10, 11, 12}));
    if (comm.rank() == 2) {
      // Rank 2 had only two non-zeros; its third pick is the zero at index 0 (lowest index).
      EXPECT_EQ(*compressor.residual("w"), std::vector<float>(6, 0.0F));
    }
  });
}

TEST(TopKCompressorEFTest, TiesGoToTheLowerIndexAndKIsCeiled) {
  RunRanks(1, [](ThreadCommunicator& comm) {
    TopKCompressorEF compressor(TopK(0.1));
    EXPECT_EQ(compressor.PickCount(320), 32);  // 0.1 * 320 is 32 exactly, not 33
    EXPECT_EQ(compressor.PickCount(321), 33);
    EXPECT_EQ(compressor.PickCount(1), 1);
    tensor::Tensor g = MakeTensor({10}, {1, -1, 1, 1, -1, 1, 1, 1, 1, 1});
    compressor.Reduce("ties", {{"w", &g}}, comm, 0);
    EXPECT_EQ(Values(g), (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  });
}

TEST(TopKCompressorEFTest, ANanIsSentRatherThanBreakingTheOrder) {
  RunRanks(1, [](ThreadCommunicator& comm) {
    TopKCompressorEF compressor(TopK(0.25));
    tensor::Tensor g = MakeTensor({4}, {1, std::nanf(""), 3, 2});
    compressor.Reduce("nan", {{"w", &g}}, comm, 0);
    EXPECT_TRUE(std::isnan(g.data<float>()[1]));
    EXPECT_EQ(g.data<float>()[2], 0.0F);
  });
}

}  // namespace
}  // namespace autodist::compress::testing
