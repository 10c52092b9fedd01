// Test double: an in-process collective::Communicator for N ranks running as threads of one test.
// Each collective publishes every rank's buffer in shared slots, waits at a barrier, lets each rank
// compute its result from all slots, and waits again before anyone may reuse its buffer. Sums
// run in rank order, so every rank gets bit-identical results, and a float16 sum rounds after
// every addition like a real float16 all-reduce. Sizes, types and tags are checked across ranks
// like the real communicator's, so a compressor calling collectives in different orders on
// different ranks fails the test instead of mixing data. If a rank throws, RunRanks aborts the
// barrier so the other ranks stop instead of hanging.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/common/error.h"
#include "runtime/tensor/float16.h"

namespace autodist::compress::testing {

// Thrown in ranks woken from a barrier because another rank failed.
struct PeerFailed : std::runtime_error {
  PeerFailed() : std::runtime_error("another rank failed") {}
};

inline size_t TestElementBytes(collective::ElementType type) {
  switch (type) {
    case collective::ElementType::kFloat32:
      return 4;
    case collective::ElementType::kFloat16:
      return 2;
    case collective::ElementType::kInt64:
      return 8;
  }
  return 0;
}

// What every rank shares: the slots of the collective in flight and a reusable barrier.
class ThreadWorld {
 public:
  explicit ThreadWorld(int size) : size_(size), slots_(static_cast<size_t>(size)) {}

  struct Slot {
    const void* data = nullptr;
    size_t count = 0;
    collective::ElementType type = collective::ElementType::kFloat32;
    std::string tag;
    int root = 0;
  };

  int size() const { return size_; }
  Slot& slot(int rank) { return slots_[static_cast<size_t>(rank)]; }

  void Wait() {
    std::unique_lock lock(mutex_);
    if (aborted_) throw PeerFailed();
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
    if (generation_ == generation) throw PeerFailed();
  }

  void Abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    changed_.notify_all();
  }

 private:
  int size_;
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

class ThreadCommunicator : public collective::Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadWorld> world, int rank)
      : world_(std::move(world)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  int64_t bytes_sent() const override { return bytes_sent_; }
  int64_t bytes_received() const override { return bytes_received_; }
  int collectives() const { return collectives_; }

  void AllReduceSum(void* data, size_t count, collective::ElementType type,
                    collective::AllReduceAlgorithm /*algorithm*/, const std::string& tag) override {
    Publish(data, count, type, tag, 0, true);
    const size_t bytes = count * TestElementBytes(type);
    std::vector<std::byte> sum(bytes);
    std::memcpy(sum.data(), world_->slot(0).data, bytes);
    for (int r = 1; r < size(); ++r) Add(sum.data(), world_->slot(r).data, count, type);
    world_->Wait();  // everyone has read every slot
    std::memcpy(data, sum.data(), bytes);
    // A ring all-reduce sends 2 (N - 1) / N of the buffer.
    const auto share = static_cast<int64_t>(2 * bytes * static_cast<size_t>(size() - 1) /
                                            static_cast<size_t>(size()));
    bytes_sent_ += share;
    bytes_received_ += share;
  }

  void AllGather(const void* in, size_t count, collective::ElementType type, void* out,
                 const std::string& tag) override {
    Publish(in, count, type, tag, 0, true);
    const size_t bytes = count * TestElementBytes(type);
    for (int r = 0; r < size(); ++r) {
      std::memcpy(static_cast<std::byte*>(out) + bytes * static_cast<size_t>(r),
                  world_->slot(r).data, bytes);
    }
    world_->Wait();
    bytes_sent_ += static_cast<int64_t>(bytes * static_cast<size_t>(size() - 1));
    bytes_received_ += static_cast<int64_t>(bytes * static_cast<size_t>(size() - 1));
  }

  void ReduceScatterSum(const void* in, void* out, size_t count, collective::ElementType type,
                        const std::string& tag) override {
    Publish(in, count, type, tag, 0, true);
    const size_t bytes = count * TestElementBytes(type);
    const auto block = [&](int r) {
      return static_cast<const std::byte*>(world_->slot(r).data) +
             bytes * static_cast<size_t>(rank_);
    };
    std::vector<std::byte> sum(block(0), block(0) + bytes);
    for (int r = 1; r < size(); ++r) Add(sum.data(), block(r), count, type);
    world_->Wait();  // everyone has read every slot (out may be this rank's block of in)
    std::memcpy(out, sum.data(), bytes);
    bytes_sent_ += static_cast<int64_t>(bytes * static_cast<size_t>(size() - 1));
    bytes_received_ += static_cast<int64_t>(bytes * static_cast<size_t>(size() - 1));
  }

  std::vector<size_t> AllGatherV(const void* in, size_t count, collective::ElementType type,
                                 std::vector<std::byte>& out, const std::string& tag) override {
    Publish(in, count, type, tag, 0, false);
    const size_t element = TestElementBytes(type);
    std::vector<size_t> counts;
    out.clear();
    for (int r = 0; r < size(); ++r) {
      const ThreadWorld::Slot& slot = world_->slot(r);
      counts.push_back(slot.count);
      const auto* begin = static_cast<const std::byte*>(slot.data);
      out.insert(out.end(), begin, begin + slot.count * element);
    }
    world_->Wait();
    bytes_sent_ += static_cast<int64_t>(count * element * static_cast<size_t>(size() - 1));
    bytes_received_ += static_cast<int64_t>(out.size() - count * element);
    return counts;
  }

  void Broadcast(void* data, size_t bytes, int root, const std::string& tag) override {
    Publish(data, bytes, collective::ElementType::kFloat32, tag, root, true);
    AD_CHECK(root >= 0 && root < size(), kInvalidArgument, "broadcast '{}': root {} of {} ranks",
             tag, root, size());
    for (int r = 0; r < size(); ++r) {
      AD_CHECK(world_->slot(r).root == root, kFailedPrecondition,
               "broadcast '{}': rank {} uses root {} but rank {} uses {}", tag, rank_, root, r,
               world_->slot(r).root);
    }
    if (rank_ != root) std::memcpy(data, world_->slot(root).data, bytes);
    world_->Wait();
    if (rank_ == root) bytes_sent_ += static_cast<int64_t>(bytes * static_cast<size_t>(size() - 1));
    if (rank_ != root) bytes_received_ += static_cast<int64_t>(bytes);
  }

  void Barrier(const std::string& tag) override {
    Publish(nullptr, 0, collective::ElementType::kFloat32, tag, 0, true);
    world_->Wait();
  }

  // Every rank's collective in flight, and each later one, fails (as when a rank throws).
  void Abort(const std::string& /*reason*/) override { world_->Abort(); }

 private:
  // Fills this rank's slot, waits for all, and checks that they call the same collective.
  void Publish(const void* data, size_t count, collective::ElementType type, const std::string& tag,
               int root, bool same_count) {
    ++collectives_;
    ThreadWorld::Slot& mine = world_->slot(rank_);
    mine = {data, count, type, tag, root};
    world_->Wait();
    for (int r = 0; r < size(); ++r) {
      const ThreadWorld::Slot& other = world_->slot(r);
      AD_CHECK(other.tag == tag && other.type == type && (!same_count || other.count == count),
               kFailedPrecondition,
               "collective mismatch: rank {} called '{}' with {} elements, rank {} called '{}' "
               "with {}",
               rank_, tag, count, r, other.tag, other.count);
    }
  }

  static void Add(std::byte* sum, const void* addend, size_t count, collective::ElementType type) {
    switch (type) {
      case collective::ElementType::kFloat32: {
        auto* s = reinterpret_cast<float*>(sum);
        const auto* a = static_cast<const float*>(addend);
        for (size_t i = 0; i < count; ++i) s[i] += a[i];
        break;
      }
      case collective::ElementType::kFloat16:
        tensor::AddHalves(reinterpret_cast<uint16_t*>(sum), static_cast<const uint16_t*>(addend),
                          count);
        break;
      case collective::ElementType::kInt64: {
        auto* s = reinterpret_cast<int64_t*>(sum);
        const auto* a = static_cast<const int64_t*>(addend);
        for (size_t i = 0; i < count; ++i) s[i] += a[i];
        break;
      }
    }
  }

  std::shared_ptr<ThreadWorld> world_;
  int rank_;
  int64_t bytes_sent_ = 0;
  int64_t bytes_received_ = 0;
  int collectives_ = 0;
};

// Runs body(communicator) on `ranks` threads, one communicator each; rethrows the first failure
// (by rank) that was not just a reaction to another rank's failure.
inline void RunRanks(int ranks, const std::function<void(ThreadCommunicator&)>& body) {
  auto world = std::make_shared<ThreadWorld>(ranks);
  std::vector<std::exception_ptr> failures(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      ThreadCommunicator communicator(world, rank);
      try {
        body(communicator);
      } catch (const PeerFailed&) {
        // Another rank's failure is the one to report.
      } catch (...) {
        failures[static_cast<size_t>(rank)] = std::current_exception();
        world->Abort();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace autodist::compress::testing
