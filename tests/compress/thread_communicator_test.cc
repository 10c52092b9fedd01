// The in-process communicator the compressor tests run on: its sums, gathers and size checks.
#include "tests/compress/thread_communicator.h"

#include <gtest/gtest.h>

#include <mutex>

#include "runtime/common/error.h"
#include "runtime/tensor/float16.h"

namespace autodist::compress::testing {
namespace {

TEST(ThreadCommunicatorTest, AllReduceSumsEveryType) {
  RunRanks(3, [](ThreadCommunicator& comm) {
    const int r = comm.rank();
    std::vector<float> floats = {float(r), 0.5F * float(r)};
    comm.AllReduceSum(floats.data(), 2, collective::ElementType::kFloat32,
                      collective::AllReduceAlgorithm::kRing, "f32");
    EXPECT_EQ(floats, (std::vector<float>{3.0F, 1.5F}));
    std::vector<int64_t> ints = {int64_t{1} << (40 + r)};
    comm.AllReduceSum(ints.data(), 1, collective::ElementType::kInt64,
                      collective::AllReduceAlgorithm::kAuto, "i64");
    EXPECT_EQ(ints[0], (int64_t{1} << 40) + (int64_t{1} << 41) + (int64_t{1} << 42));
    // float16, rounded after each addition in rank order: 2048 + 1 rounds to 2048 (ulp 2 there),
    // and again, so 2048 and not 2050.
    std::vector<uint16_t> halves = {tensor::FloatToHalf(r == 0 ? 2048.0F : 1.0F)};
    comm.AllReduceSum(halves.data(), 1, collective::ElementType::kFloat16,
                      collective::AllReduceAlgorithm::kAuto, "f16");
    EXPECT_EQ(tensor::HalfToFloat(halves[0]), 2048.0F);
  });
}

TEST(ThreadCommunicatorTest, GathersAndBroadcasts) {
  RunRanks(3, [](ThreadCommunicator& comm) {
    const int r = comm.rank();
    const std::vector<int64_t> mine = {r, int64_t{10} * r};
    std::vector<int64_t> all(6);
    comm.AllGather(mine.data(), 2, collective::ElementType::kInt64, all.data(), "gather");
    EXPECT_EQ(all, (std::vector<int64_t>{0, 0, 1, 10, 2, 20}));

    const std::vector<float> varying(static_cast<size_t>(r), float(r));
    std::vector<std::byte> out;
    const std::vector<size_t> counts = comm.AllGatherV(varying.data(), varying.size(),
                                                       collective::ElementType::kFloat32, out, "v");
    EXPECT_EQ(counts, (std::vector<size_t>{0, 1, 2}));
    ASSERT_EQ(out.size(), 3 * sizeof(float));
    const auto* values = reinterpret_cast<const float*>(out.data());
    EXPECT_EQ(values[0], 1.0F);
    EXPECT_EQ(values[2], 2.0F);

    double value = r == 1 ? 3.25 : 0.0;
    comm.Broadcast(&value, sizeof(value), 1, "bcast");
    EXPECT_EQ(value, 3.25);
    comm.Barrier("end");
    // To the 2 other ranks: 2 int64 gathered, r float32 gathered, 8 bytes broadcast from rank 1.
    const int64_t expected = (int64_t{16} + int64_t{4} * r + (r == 1 ? 8 : 0)) * 2;
    EXPECT_EQ(comm.bytes_sent(), expected);
  });
}

TEST(ThreadCommunicatorTest, MismatchedCallsFailOnEveryRank) {
  std::mutex mutex;
  int failures = 0;
  try {
    RunRanks(2, [&](ThreadCommunicator& comm) {
      std::vector<float> data(comm.rank() == 0 ? 3 : 4, 1.0F);
      try {
        comm.AllReduceSum(data.data(), data.size(), collective::ElementType::kFloat32,
                          collective::AllReduceAlgorithm::kAuto, "group-0");
      } catch (const Error&) {
        std::lock_guard lock(mutex);
        ++failures;
        throw;
      }
    });
    FAIL() << "expected a mismatch error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(error.what()).find("group-0"), std::string::npos) << error.what();
  }
  EXPECT_EQ(failures, 2);
}

TEST(ThreadCommunicatorTest, AFailingRankReleasesTheOthers) {
  EXPECT_THROW(RunRanks(3,
                        [](ThreadCommunicator& comm) {
                          if (comm.rank() == 2) throw std::logic_error("rank 2 broke");
                          comm.Barrier("never completes");
                        }),
               std::logic_error);
}

}  // namespace
}  // namespace autodist::compress::testing
