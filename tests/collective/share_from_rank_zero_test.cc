// ShareFromRankZero: how the ranks of a backend that needs one shared random token (NCCL's unique
// id) get it through the job's rendezvous store, as the coordinator's store hands it out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collective/memory_rendezvous_store.h"
#include "runtime/collective/rendezvous.h"
#include "runtime/common/error.h"

namespace autodist::collective {
namespace {

using std::chrono::milliseconds;

TEST(ShareFromRankZeroTest, EveryRankGetsRankZerosBytesAndOnlyRankZeroMakesThem) {
  MemoryRendezvousStore store;
  constexpr int kRanks = 4;
  // Binary, with a zero byte and bytes above 127, as an ncclUniqueId is.
  const std::string token("\x00\x01\xfe\xff nccl id", 12);
  std::atomic<int> made{0};
  std::vector<std::string> got(kRanks);
  std::vector<std::thread> ranks;
  for (int rank = kRanks - 1; rank >= 0; --rank) {  // rank 0 last: the others wait for it
    ranks.emplace_back([&, rank] {
      got[static_cast<size_t>(rank)] = ShareFromRankZero(
          store, "job/nccl-id", rank,
          [&] {
            ++made;
            return token;
          },
          milliseconds(10000));
    });
  }
  for (std::thread& rank : ranks) rank.join();
  EXPECT_EQ(made.load(), 1);
  for (const std::string& bytes : got) EXPECT_EQ(bytes, token);
}

TEST(ShareFromRankZeroTest, ARankWhoseRankZeroNeverComesTimesOutNamingTheKey) {
  MemoryRendezvousStore store;
  try {
    ShareFromRankZero(
        store, "job/nccl-id", 1, [] { return std::string("x"); }, milliseconds(50));
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable) << error.what();
    EXPECT_THAT(error.what(), ::testing::HasSubstr("job/nccl-id"));
  }
}

TEST(ShareFromRankZeroTest, AValueThatIsNotATokenIsRefusedNamingTheKey) {
  MemoryRendezvousStore store;
  store.Set("job/nccl-id", "not base64!");
  try {
    ShareFromRankZero(
        store, "job/nccl-id", 1, [] { return std::string("x"); }, milliseconds(50));
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
    EXPECT_THAT(error.what(), ::testing::HasSubstr("rendezvous key 'job/nccl-id' holds no base64"));
  }
}

TEST(GatherFromEveryRankTest, EveryProcessReadsEveryRanksValueInRankOrder) {
  MemoryRendezvousStore store;
  // Two processes: one with ranks 0 and 1, one with rank 2; each waits for the other's.
  auto second = std::async(std::launch::async, [&] {
    return GatherFromEveryRank(store, "job/gpus", 2, {"b/0"}, 3, milliseconds(5000));
  });
  const std::vector<std::string> first =
      GatherFromEveryRank(store, "job/gpus", 0, {"a/0", "a/1"}, 3, milliseconds(5000));
  const std::vector<std::string> expected{"a/0", "a/1", "b/0"};
  EXPECT_EQ(first, expected);
  EXPECT_EQ(second.get(), expected);
}

TEST(GatherFromEveryRankTest, ARankThatNeverPublishesTimesOutNamingItsKey) {
  MemoryRendezvousStore store;
  try {
    GatherFromEveryRank(store, "job/gpus", 0, {"a/0"}, 2, milliseconds(50));
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable) << error.what();
    EXPECT_THAT(error.what(), ::testing::HasSubstr("job/gpus/1"));
  }
}

}  // namespace
}  // namespace autodist::collective
