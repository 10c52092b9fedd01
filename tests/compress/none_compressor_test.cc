// NoneCompressor: exact sums over 2 to 4 ranks, one fused collective for a group of tensors of
// different shapes.
#include "runtime/compress/none_compressor.h"

#include <gtest/gtest.h>

#include "tests/compress/compress_test_util.h"
#include "tests/compress/thread_communicator.h"

namespace autodist::compress::testing {
namespace {

const std::vector<tensor::Shape> kShapes = {{3, 4}, {5}, {2, 3, 2}, {}};
const std::vector<std::string> kNames = {"dense/kernel", "dense/bias", "conv/kernel", "scale"};

std::vector<float> RankValues(int rank, size_t tensor, int64_t step) {
  return IntegerValues(
      static_cast<size_t>(tensor::NumElements(kShapes[tensor])),
      1000 * static_cast<uint64_t>(step) + 10 * static_cast<uint64_t>(rank) + tensor);
}

class NoneCompressorTest : public ::testing::TestWithParam<int> {};

TEST_P(NoneCompressorTest, SumsExactlyWithOneCollectivePerGroup) {
  const int ranks = GetParam();
  RunRanks(ranks, [&](ThreadCommunicator& comm) {
    const auto compressor = MakeCompressor({.kind = CompressorKind::kNone});
    for (int64_t step = 0; step < 2; ++step) {
      std::vector<tensor::Tensor> tensors;
      for (size_t t = 0; t < kShapes.size(); ++t) {
        tensors.push_back(MakeTensor(kShapes[t], RankValues(comm.rank(), t, step)));
      }
      const int before = comm.collectives();
      compressor->Reduce("group-0", Group(kNames, tensors), comm, step);
      EXPECT_EQ(comm.collectives() - before, 1);
      for (size_t t = 0; t < kShapes.size(); ++t) {
        std::vector<float> expected(static_cast<size_t>(tensor::NumElements(kShapes[t])), 0.0F);
        for (int r = 0; r < ranks; ++r) {
          const std::vector<float> values = RankValues(r, t, step);
          for (size_t i = 0; i < expected.size(); ++i) expected[i] += values[i];
        }
        EXPECT_EQ(Values(tensors[t]), expected) << kNames[t];
        EXPECT_EQ(tensors[t].shape(), kShapes[t]);
      }
    }
    const int64_t bytes_per_step = int64_t{12 + 5 + 12 + 1} * 4;
    EXPECT_EQ(compressor->stats().raw_bytes, 2 * bytes_per_step);
    EXPECT_EQ(compressor->stats().wire_bytes, 2 * bytes_per_step);
    EXPECT_EQ(compressor->stats().ratio(), 1.0);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, NoneCompressorTest, ::testing::Values(2, 3, 4));

TEST(NoneCompressorSingleTest, OneTensorIsReducedInPlace) {
  RunRanks(2, [](ThreadCommunicator& comm) {
    NoneCompressor compressor({});
    tensor::Tensor gradient = MakeTensor({2, 2}, {1, 2, 3, float(comm.rank())});
    const void* storage = gradient.raw();
    compressor.Reduce("g", {{"w", &gradient}}, comm, 0);
    EXPECT_EQ(Values(gradient), (std::vector<float>{2, 4, 6, 1}));
    EXPECT_EQ(gradient.raw(), storage);
  });
}

TEST(NoneCompressorSingleTest, AnEmptyGroupSendsNothing) {
  RunRanks(2, [](ThreadCommunicator& comm) {
    NoneCompressor compressor({});
    compressor.Reduce("g", {}, comm, 0);
    EXPECT_EQ(comm.collectives(), 0);
    EXPECT_EQ(compressor.stats().wire_bytes, 0);
  });
}

}  // namespace
}  // namespace autodist::compress::testing
