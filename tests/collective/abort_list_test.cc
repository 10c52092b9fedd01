// The list of communicators a job member aborts when its job fails: every listed communicator
// gets the reason, and one whose entry is gone is never reached.
#include "runtime/collective/abort_list.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace autodist::collective {
namespace {

// Records the reasons it was aborted with; no collective is called here.
class RecordingCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void AllReduceSum(void*, size_t, ElementType, AllReduceAlgorithm, const std::string&) override {}
  void AllGather(const void*, size_t, ElementType, void*, const std::string&) override {}
  void ReduceScatterSum(const void*, void*, size_t, ElementType, const std::string&) override {}
  std::vector<size_t> AllGatherV(const void*, size_t count, ElementType, std::vector<std::byte>&,
                                 const std::string&) override {
    return {count};
  }
  void Broadcast(void*, size_t, int, const std::string&) override {}
  void Barrier(const std::string&) override {}
  void Abort(const std::string& reason) override { reasons.push_back(reason); }
  int64_t bytes_sent() const override { return 0; }
  int64_t bytes_received() const override { return 0; }

  std::vector<std::string> reasons;
};

TEST(AbortListTest, AbortsEveryListedCommunicatorWithTheReason) {
  AbortList list;
  RecordingCommunicator gloo;
  RecordingCommunicator nccl;
  const AbortList::Entry first = list.Add(gloo);
  const AbortList::Entry second = list.Add(nccl);
  EXPECT_EQ(list.AbortAll("worker-1 died (exit code 137)"), 2U);
  EXPECT_EQ(gloo.reasons, std::vector<std::string>{"worker-1 died (exit code 137)"});
  EXPECT_EQ(nccl.reasons, std::vector<std::string>{"worker-1 died (exit code 137)"});
}

TEST(AbortListTest, ACommunicatorWhoseEntryIsGoneIsNotReached) {
  AbortList list;
  RecordingCommunicator kept;
  RecordingCommunicator gone;
  const AbortList::Entry entry = list.Add(kept);
  { const AbortList::Entry short_lived = list.Add(gone); }
  EXPECT_EQ(list.size(), 1U);
  EXPECT_EQ(list.AbortAll("lost the coordinator"), 1U);
  EXPECT_EQ(kept.reasons.size(), 1U);
  EXPECT_TRUE(gone.reasons.empty());
}

TEST(AbortListTest, AMovedEntryKeepsItsCommunicatorListedOnce) {
  AbortList list;
  RecordingCommunicator communicator;
  std::vector<AbortList::Entry> entries;
  entries.push_back(list.Add(communicator));
  AbortList::Entry moved = std::move(entries.front());
  entries.clear();  // the moved-from entry removes nothing
  EXPECT_EQ(list.size(), 1U);
  EXPECT_EQ(list.AbortAll("stop"), 1U);
  EXPECT_EQ(communicator.reasons.size(), 1U);
  moved = AbortList::Entry();  // assigning over an entry removes its communicator
  EXPECT_EQ(list.size(), 0U);
  EXPECT_EQ(list.AbortAll("again"), 0U);
}

}  // namespace
}  // namespace autodist::collective
