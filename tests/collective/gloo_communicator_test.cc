// The Gloo communicator's collectives, with every rank a thread of this process (gloo's HashStore
// for the rendezvous): ranks {2, 3, 4} x sizes x algorithms x element types. Values are small
// integers, so that sums are exact in float16 too and results compare bit for bit. Failures (size
// mismatches, a rank that stops taking part, the coordinator's store) are in
// gloo_failure_test.cc.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "runtime/collective/gloo/communicator.h"
#include "tests/collective/gloo_test_util.h"

namespace autodist::collective {
namespace {

using testing::FromHalf;
using testing::Half;
using testing::RunRanks;

// 3 elements: fewer than halving-doubling's 4 ranks (and the direct all-reduce's), which then
// run recursive doubling. 1001: odd halves and uneven shares. 1 << 20: pieces (4 MiB of float32;
// recursive doubling's are 256 KiB).
constexpr size_t kSizes[] = {1, 3, 1001, size_t{1} << 20};
constexpr AllReduceAlgorithm kAlgorithms[] = {
    AllReduceAlgorithm::kAuto, AllReduceAlgorithm::kRing, AllReduceAlgorithm::kHalvingDoubling,
    AllReduceAlgorithm::kRecursiveDoubling, AllReduceAlgorithm::kDirect};
constexpr ElementType kFloatTypes[] = {ElementType::kFloat32, ElementType::kFloat16};

// Rank r's i-th element: small, different per rank and element.
int Value(int rank, size_t i) { return (rank + 1) * static_cast<int>(i % 7 + 1); }

// Element i of the sum over `size` ranks.
int Sum(int size, size_t i) { return static_cast<int>(i % 7 + 1) * size * (size + 1) / 2; }

// `count` elements of `type` holding `value(i)`.
std::vector<std::byte> Fill(ElementType type, size_t count,
                            const std::function<int(size_t)>& value) {
  std::vector<std::byte> out(count * ElementBytes(type));
  for (size_t i = 0; i < count; ++i) {
    if (type == ElementType::kFloat32) {
      const float v = static_cast<float>(value(i));
      std::memcpy(out.data() + 4 * i, &v, 4);
    } else if (type == ElementType::kFloat16) {
      const uint16_t v = Half(static_cast<float>(value(i)));
      std::memcpy(out.data() + 2 * i, &v, 2);
    } else {
      const int64_t v = value(i);
      std::memcpy(out.data() + 8 * i, &v, 8);
    }
  }
  return out;
}

double At(ElementType type, const std::byte* data, size_t i) {
  if (type == ElementType::kFloat32) {
    float v;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  }
  if (type == ElementType::kFloat16) {
    uint16_t v;
    std::memcpy(&v, data + 2 * i, 2);
    return FromHalf(v);
  }
  int64_t v;
  std::memcpy(&v, data + 8 * i, 8);
  return static_cast<double>(v);
}

// The first element of `data` that is not `expected(i)`, as a message ("" when all match).
std::string FirstMismatch(ElementType type, const std::byte* data, size_t count,
                          const std::function<int(size_t)>& expected) {
  for (size_t i = 0; i < count; ++i) {
    if (At(type, data, i) != expected(i)) {
      return fmt::format("element {} of {}: got {}, expected {}", i, count, At(type, data, i),
                         expected(i));
    }
  }
  return "";
}

class GlooRanksTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooRanksTest, AllReduceSumIsExactForEverySizeAlgorithmAndType) {
  const int size = GetParam();
  GlooOptions options;
  options.auto_ring_min_bytes = 64 << 10;  // Auto takes both paths: 1 and 1000 elements vs 1 << 20
  const auto errors = RunRanks(
      size,
      [&](Communicator& comm) {
        for (ElementType type : kFloatTypes) {
          for (AllReduceAlgorithm algorithm : kAlgorithms) {
            for (size_t count : kSizes) {
              std::vector<std::byte> data =
                  Fill(type, count, [&](size_t i) { return Value(comm.rank(), i); });
              const std::string tag = fmt::format("{}-{}-{}", ElementTypeName(type),
                                                  static_cast<int>(algorithm), count);
              comm.AllReduceSum(data.data(), count, type, algorithm, tag);
              EXPECT_EQ(
                  FirstMismatch(type, data.data(), count, [&](size_t i) { return Sum(size, i); }),
                  "")
                  << tag << " on rank " << comm.rank();
            }
          }
        }
      },
      options);
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST_P(GlooRanksTest, AllReduceSumReusesATagAcrossCallsAndBuffers) {
  const int size = GetParam();
  const auto errors = RunRanks(size, [&](Communicator& comm) {
    for (AllReduceAlgorithm algorithm :
         {AllReduceAlgorithm::kHalvingDoubling, AllReduceAlgorithm::kRecursiveDoubling,
          AllReduceAlgorithm::kDirect}) {
      for (int step = 0; step < 3; ++step) {
        // A fresh buffer every step (and a different one on every rank): the object cached for
        // the tag sends from and receives into the caller's data, so it must follow the pointer.
        std::vector<std::byte> data = Fill(ElementType::kFloat32, 1000 + 8 * comm.rank(),
                                           [&](size_t i) { return Value(comm.rank(), i) + step; });
        comm.AllReduceSum(data.data(), 1000, ElementType::kFloat32, algorithm, "grads");
        EXPECT_EQ(FirstMismatch(ElementType::kFloat32, data.data(), 1000,
                                [&](size_t i) { return Sum(size, i) + step * size; }),
                  "")
            << "step " << step << ", algorithm " << static_cast<int>(algorithm);
      }
    }
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

// One tag, a different size each call: the object kept for the tag's remainder piece is rebuilt
// for each new size (and whole pieces keep theirs), with the right sums every time.
TEST_P(GlooRanksTest, AllReduceSumFollowsATagWhoseSizeChanges) {
  const int size = GetParam();
  GlooOptions options;
  options.halving_doubling_piece_bytes = 4096;  // 1024 floats a piece
  const auto errors = RunRanks(
      size,
      [&](Communicator& comm) {
        for (AllReduceAlgorithm algorithm :
             {AllReduceAlgorithm::kHalvingDoubling, AllReduceAlgorithm::kRecursiveDoubling,
              AllReduceAlgorithm::kDirect}) {
          for (const size_t count : {1000, 2500, 7, 2500, 1024, 3000}) {
            std::vector<std::byte> data =
                Fill(ElementType::kFloat32, count, [&](size_t i) { return Value(comm.rank(), i); });
            comm.AllReduceSum(data.data(), count, ElementType::kFloat32, algorithm, "varying");
            EXPECT_EQ(FirstMismatch(ElementType::kFloat32, data.data(), count,
                                    [&](size_t i) { return Sum(size, i); }),
                      "")
                << count << " elements, algorithm " << static_cast<int>(algorithm);
          }
        }
      },
      options);
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

// Rank q's element j of a reduce-scatter's input, with blocks of `count`: block r of every rank
// sums to Sum(size, ·) over the block's own indices, so each rank can check its block.
TEST_P(GlooRanksTest, ReduceScatterSumGivesEachRankItsBlocksSumInPlaceOrNot) {
  const int size = GetParam();
  GlooOptions options;
  options.halving_doubling_piece_bytes = 4096;  // pieces: 1024 floats, 512 halves, 512 int64
  const auto errors = RunRanks(
      size,
      [&](Communicator& comm) {
        for (const ElementType type :
             {ElementType::kFloat32, ElementType::kFloat16, ElementType::kInt64}) {
          for (const size_t count : {size_t{1}, size_t{1001}, size_t{3000}}) {
            const auto value = [&](size_t j) { return Value(comm.rank(), j % count); };
            std::vector<std::byte> in = Fill(type, count * static_cast<size_t>(size), value);
            std::vector<std::byte> out(count * ElementBytes(type));
            comm.ReduceScatterSum(in.data(), out.data(), count, type, "shards");
            EXPECT_EQ(
                FirstMismatch(type, out.data(), count, [&](size_t i) { return Sum(size, i); }), "")
                << ElementTypeName(type) << ", " << count << " elements";
            // In place: the result lands in this rank's own block of the input.
            std::byte* own = in.data() + static_cast<size_t>(comm.rank()) * out.size();
            comm.ReduceScatterSum(in.data(), own, count, type, "shards");
            EXPECT_EQ(FirstMismatch(type, own, count, [&](size_t i) { return Sum(size, i); }), "")
                << ElementTypeName(type) << ", " << count << " elements, in place";
          }
        }
      },
      options);
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST_P(GlooRanksTest, ReduceScatterSumRefusesAnOutThatOverlapsAnotherRanksBlock) {
  const int size = GetParam();
  const auto errors = RunRanks(size, [&](Communicator& comm) {
    std::vector<float> in(4 * static_cast<size_t>(size), 1.0F);
    // Rank 0's block for every rank: right only on rank 0.
    float* out = comm.rank() == 0 ? in.data() + 4 : in.data();
    try {
      comm.ReduceScatterSum(in.data(), out, 4, ElementType::kFloat32, "shards");
      ADD_FAILURE() << "rank " << comm.rank() << ": no error";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(error.what(),
                  ::testing::HasSubstr("out overlaps in other than as this rank's own block"));
    }
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST_P(GlooRanksTest, HalvingDoublingRunsInPiecesWithARemainder) {
  const int size = GetParam();
  GlooOptions options;
  options.halving_doubling_piece_bytes = 1024;  // 1000 float32: pieces of 256, 256, 256 and 232
  const auto errors = RunRanks(
      size,
      [&](Communicator& comm) {
        for (ElementType type : kFloatTypes) {
          std::vector<std::byte> data =
              Fill(type, 1000, [&](size_t i) { return Value(comm.rank(), i); });
          comm.AllReduceSum(data.data(), 1000, type, AllReduceAlgorithm::kHalvingDoubling,
                            "pieces");
          EXPECT_EQ(FirstMismatch(type, data.data(), 1000, [&](size_t i) { return Sum(size, i); }),
                    "")
              << ElementTypeName(type);
        }
      },
      options);
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

// Sums that round: every rank must still end with the same bits (a replica whose weights drift
// from the others' by one ulp per step is a diverged replica), and close to the exact sum.
TEST_P(GlooRanksTest, EveryRankEndsWithTheSameBitsWhenSumsRound) {
  const int size = GetParam();
  constexpr size_t kCount = 1001;
  std::vector<std::vector<float>> results(static_cast<size_t>(size));
  for (AllReduceAlgorithm algorithm :
       {AllReduceAlgorithm::kHalvingDoubling, AllReduceAlgorithm::kRecursiveDoubling,
        AllReduceAlgorithm::kDirect}) {
    const auto errors = RunRanks(size, [&](Communicator& comm) {
      std::vector<float> data(kCount);
      for (size_t i = 0; i < kCount; ++i) {
        data[i] = 1.0F / static_cast<float>(3 + i + 7 * static_cast<size_t>(comm.rank()));
      }
      comm.AllReduceSum(data.data(), kCount, ElementType::kFloat32, algorithm, "rounding");
      results[static_cast<size_t>(comm.rank())] = data;
    });
    for (const auto& error : errors) ASSERT_FALSE(error) << testing::Describe(error);
    for (int rank = 1; rank < size; ++rank) {
      EXPECT_EQ(std::memcmp(results[0].data(), results[static_cast<size_t>(rank)].data(),
                            kCount * sizeof(float)),
                0)
          << "rank " << rank << " differs from rank 0, algorithm " << static_cast<int>(algorithm);
    }
    for (size_t i = 0; i < kCount; ++i) {
      double exact = 0;
      for (int rank = 0; rank < size; ++rank) exact += 1.0 / static_cast<double>(3 + i + 7 * rank);
      ASSERT_NEAR(results[0][i], exact, 4e-7 * exact) << "element " << i;
    }
  }
}

TEST_P(GlooRanksTest, AllReduceSumOfInt64) {
  const int size = GetParam();
  const auto errors = RunRanks(size, [&](Communicator& comm) {
    for (AllReduceAlgorithm algorithm : kAlgorithms) {
      std::vector<int64_t> data(1000, (int64_t{1} << 40) + comm.rank());
      comm.AllReduceSum(data.data(), data.size(), ElementType::kInt64, algorithm, "counters");
      const int64_t expected = size * (int64_t{1} << 40) + size * (size - 1) / 2;
      EXPECT_THAT(data, ::testing::Each(expected));
    }
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST_P(GlooRanksTest, AllGatherConcatenatesInRankOrder) {
  const int size = GetParam();
  const auto errors = RunRanks(size, [&](Communicator& comm) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{1000}}) {
      const std::vector<float> in(count, static_cast<float>(comm.rank()));
      std::vector<float> out(count * static_cast<size_t>(size), -1.0F);
      comm.AllGather(in.data(), count, ElementType::kFloat32, out.data(), "gather");
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(out[i], static_cast<float>(i / count)) << "element " << i << " of " << count;
      }
    }
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST_P(GlooRanksTest, AllGatherVTakesEveryRanksOwnCountIncludingZero) {
  const int size = GetParam();
  const auto errors = RunRanks(size, [&](Communicator& comm) {
    // Rank r sends 3r elements (rank 0 none), each holding 100 r + its index.
    const size_t count = 3 * static_cast<size_t>(comm.rank());
    std::vector<int64_t> in(count);
    for (size_t i = 0; i < count; ++i) in[i] = 100 * comm.rank() + static_cast<int64_t>(i);
    std::vector<std::byte> out;
    const std::vector<size_t> counts =
        comm.AllGatherV(in.data(), count, ElementType::kInt64, out, "sparse-rows");
    std::vector<size_t> expected_counts;
    std::vector<int64_t> expected;
    for (int r = 0; r < size; ++r) {
      expected_counts.push_back(3 * static_cast<size_t>(r));
      for (int i = 0; i < 3 * r; ++i) expected.push_back(100 * r + i);
    }
    EXPECT_EQ(counts, expected_counts);
    ASSERT_EQ(out.size(), expected.size() * sizeof(int64_t));
    std::vector<int64_t> got(expected.size());
    std::memcpy(got.data(), out.data(), out.size());
    EXPECT_EQ(got, expected);

    // Nobody sends anything.
    out.assign(5, std::byte{1});
    EXPECT_EQ(comm.AllGatherV(nullptr, 0, ElementType::kFloat16, out, "empty"),
              std::vector<size_t>(static_cast<size_t>(size), 0));
    EXPECT_TRUE(out.empty());
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST_P(GlooRanksTest, BroadcastFromANonZeroRoot) {
  const int size = GetParam();
  const int root = size - 1;
  const auto errors = RunRanks(size, [&](Communicator& comm) {
    for (size_t bytes : {size_t{1}, size_t{1} << 20}) {
      std::vector<uint8_t> data(bytes, 0);
      if (comm.rank() == root) {
        for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
      }
      comm.Broadcast(data.data(), bytes, root, "initial-values");
      for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(data[i], static_cast<uint8_t>(i * 31 + 7)) << "byte " << i << " of " << bytes;
      }
    }
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST_P(GlooRanksTest, BarrierWaitsForTheLastRank) {
  const int size = GetParam();
  constexpr auto kDelay = std::chrono::milliseconds(300);
  const auto errors = RunRanks(size, [&](Communicator& comm) {
    comm.Barrier("start");  // everyone connected
    const auto started = std::chrono::steady_clock::now();
    if (comm.rank() == size - 1) std::this_thread::sleep_for(kDelay);
    comm.Barrier("epoch");
    EXPECT_GE(testing::Seconds(std::chrono::steady_clock::now() - started), 0.25)
        << "rank " << comm.rank() << " left the barrier before the last rank arrived";
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooRanksTest, ::testing::Values(2, 3, 4),
                         [](const auto& test) { return fmt::format("{}Ranks", test.param); });

TEST(GlooCommunicatorTest, BytesSentFollowTheAlgorithm) {
  const auto errors = RunRanks(4, [&](Communicator& comm) {
    std::vector<float> data(1 << 16, 1.0F);  // 256 KiB
    comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32, AllReduceAlgorithm::kRing,
                      "ring");
    EXPECT_EQ(comm.bytes_sent(), 2 * 3 * (int64_t{1} << 18) / 4);  // 2(n-1)/n of the bytes
    std::vector<float> gathered(4 * 1000);
    comm.AllGather(data.data(), 1000, ElementType::kFloat32, gathered.data(), "gather");
    EXPECT_EQ(comm.bytes_sent(), 2 * 3 * (int64_t{1} << 18) / 4 + 3 * 4000);
    // Both are symmetric: every rank's block goes to, and comes from, each of the others.
    EXPECT_EQ(comm.bytes_received(), comm.bytes_sent());
    // AllGatherV: every rank's block but this rank's own comes in; rank r sends r + 1 floats.
    const int64_t before_sent = comm.bytes_sent();
    const int64_t before_received = comm.bytes_received();
    std::vector<std::byte> varied;
    comm.AllGatherV(data.data(), static_cast<size_t>(comm.rank() + 1), ElementType::kFloat32,
                    varied, "gatherv");
    EXPECT_EQ(comm.bytes_received() - before_received, 4 * (1 + 2 + 3 + 4 - (comm.rank() + 1)));
    // Each rank sends its own block straight to each of the 3 others.
    EXPECT_EQ(comm.bytes_sent() - before_sent, 3 * 4 * (comm.rank() + 1));
    // Broadcast: the root receives nothing, every other rank the bytes once.
    const int64_t received_before_broadcast = comm.bytes_received();
    comm.Broadcast(data.data(), 400, /*root=*/2, "broadcast");
    EXPECT_EQ(comm.bytes_received() - received_before_broadcast, comm.rank() == 2 ? 0 : 400);
    // Halving-doubling moves 2(n-1)/n of the bytes too; recursive doubling the whole message at
    // each of log2(n) steps.
    const int64_t before_exchanges = comm.bytes_sent();
    const int64_t received_before_exchanges = comm.bytes_received();
    comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32,
                      AllReduceAlgorithm::kHalvingDoubling, "halving");
    EXPECT_EQ(comm.bytes_sent() - before_exchanges, 2 * 3 * (int64_t{1} << 18) / 4);
    comm.AllReduceSum(data.data(), 1000, ElementType::kFloat32,
                      AllReduceAlgorithm::kRecursiveDoubling, "doubling");
    EXPECT_EQ(comm.bytes_sent() - before_exchanges, 2 * 3 * (int64_t{1} << 18) / 4 + 2 * 4000);
    EXPECT_EQ(comm.bytes_received() - received_before_exchanges,
              comm.bytes_sent() - before_exchanges);
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST(GlooCommunicatorTest, OneRankNeedsNoPeers) {
  const auto errors = RunRanks(1, [&](Communicator& comm) {
    std::vector<float> data(10, 2.0F);
    comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32, AllReduceAlgorithm::kAuto,
                      "solo");
    EXPECT_THAT(data, ::testing::Each(2.0F));
    std::vector<float> out(10);
    comm.AllGather(data.data(), 10, ElementType::kFloat32, out.data(), "solo-gather");
    EXPECT_EQ(out, data);
    comm.Barrier("solo-barrier");
    EXPECT_EQ(comm.bytes_sent(), 0);
  });
  EXPECT_FALSE(errors[0]) << testing::Describe(errors[0]);
}

TEST(GlooCommunicatorTest, RejectsBadOptions) {
  GlooOptions options;
  options.rank = 2;
  options.size = 2;
  options.store = std::make_shared<gloo::rendezvous::HashStore>();
  try {
    MakeGlooCommunicator(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("rank 2 of 2"));
  }
  options.rank = 0;
  options.store = nullptr;
  try {
    MakeGlooCommunicator(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("no rendezvous store"));
  }
}

TEST(GlooCommunicatorTest, AutoFoldsNoRankIntoAnotherAboveRecursiveDoubling) {
  EXPECT_EQ(AutoAlgorithmAbove(2), AllReduceAlgorithm::kHalvingDoubling);
  EXPECT_EQ(AutoAlgorithmAbove(4), AllReduceAlgorithm::kHalvingDoubling);
  EXPECT_EQ(AutoAlgorithmAbove(8), AllReduceAlgorithm::kHalvingDoubling);
  EXPECT_EQ(AutoAlgorithmAbove(3), AllReduceAlgorithm::kDirect);
  EXPECT_EQ(AutoAlgorithmAbove(6), AllReduceAlgorithm::kDirect);
}

TEST(GlooCommunicatorTest, AutoSendsWholeMessagesLessFarWhereLinksCostMoreThanSteps) {
  // 2 ranks: the same bytes either way.
  EXPECT_EQ(AutoRecursiveDoublingMaxBytes(std::nullopt, 2, 2), kLocalRecursiveDoublingMaxBytes);
  EXPECT_EQ(AutoRecursiveDoublingMaxBytes(std::nullopt, 3, 3), kNetworkRecursiveDoublingMaxBytes);
  EXPECT_EQ(AutoRecursiveDoublingMaxBytes(std::nullopt, 4, 1), kLocalRecursiveDoublingMaxBytes);
  EXPECT_EQ(AutoRecursiveDoublingMaxBytes(std::nullopt, 4, 4), kNetworkRecursiveDoublingMaxBytes);
  EXPECT_EQ(AutoRecursiveDoublingMaxBytes(std::nullopt, 8, 2), kNetworkRecursiveDoublingMaxBytes);
  EXPECT_EQ(AutoRecursiveDoublingMaxBytes(size_t{100}, 8, 8), 100U);  // given: kept
}

TEST(GlooCommunicatorTest, RanksOnHostsOfTheirOwnSumExactlyOnBothSidesOfTheThreshold) {
  // 127.0.0.1-3 are three hosts to the communicator (each listens on its own address), so Auto
  // runs recursive doubling up to 8 KiB and the direct all-reduce above: a 4 KiB and a 2 MiB
  // all-reduce both sum exactly.
  constexpr int kRanks = 3;
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  std::vector<std::optional<Error>> errors(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        GlooOptions options;
        options.rank = rank;
        options.size = kRanks;
        options.store = store;
        options.hostname = fmt::format("127.0.0.{}", rank + 1);
        const std::unique_ptr<Communicator> comm = MakeGlooCommunicator(options);
        for (size_t count : {size_t{1024}, size_t{512} << 10}) {
          std::vector<float> data(count);
          for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank + 1 + (i % 7));
          comm->AllReduceSum(data.data(), count, ElementType::kFloat32, AllReduceAlgorithm::kAuto,
                             fmt::format("hosts-{}", count));
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(data[i], static_cast<float>(6 + 3 * (i % 7))) << "element " << i;
          }
        }
      } catch (const Error& e) {
        errors[static_cast<size_t>(rank)] = e;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

}  // namespace
}  // namespace autodist::collective
