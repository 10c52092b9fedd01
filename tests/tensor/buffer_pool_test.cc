// The caching buffer pool: size classes, reuse of a freed buffer by the next request of its
// class, no aliasing between classes or live buffers, the cap and its eviction order, the
// disabled pool, and concurrent use.
#include "runtime/tensor/buffer_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace autodist::tensor {
namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;

PoolOptions Options(size_t max_cached_bytes) {
  PoolOptions options;
  options.max_cached_bytes = max_cached_bytes;
  options.min_pooled_bytes = 64 * kKiB;
  return options;
}

uintptr_t Address(const BufferPool::Buffer& buffer) {
  return reinterpret_cast<uintptr_t>(buffer.storage.get());
}

TEST(SizeClassTest, RoundsUpToFourClassesPerPowerOfTwo) {
  EXPECT_EQ(SizeClassBytes(64 * kKiB), 64 * kKiB);
  EXPECT_EQ(SizeClassBytes(64 * kKiB + 1), 80 * kKiB);
  EXPECT_EQ(SizeClassBytes(100000), 112 * kKiB);
  EXPECT_EQ(SizeClassBytes(kMiB), kMiB);
  EXPECT_EQ(SizeClassBytes(kMiB + 1), kMiB + kMiB / 4);
  EXPECT_EQ(SizeClassBytes(3 * kMiB / 2), 3 * kMiB / 2);
  EXPECT_EQ(SizeClassBytes(7 * kMiB / 4 + 1), 2 * kMiB);
  EXPECT_EQ(SizeClassBytes(0), 64U);
  EXPECT_EQ(SizeClassBytes(100), 128U);  // classes stay multiples of the alignment
}

TEST(SizeClassTest, ClassHoldsTheRequestAndWastesAtMostAFifth) {
  std::mt19937_64 engine(7);
  std::uniform_int_distribution<size_t> sizes(64 * kKiB, 512 * kMiB);
  for (int i = 0; i < 10000; ++i) {
    const size_t bytes = sizes(engine);
    const size_t class_bytes = SizeClassBytes(bytes);
    ASSERT_GE(class_bytes, bytes);
    ASSERT_LE((class_bytes - bytes) * 5, class_bytes) << bytes;
    ASSERT_EQ(class_bytes % kBufferAlignment, 0U) << bytes;
    ASSERT_EQ(SizeClassBytes(class_bytes), class_bytes) << bytes;  // a class is its own class
  }
}

TEST(BufferPoolTest, FreedBufferServesTheNextRequestOfItsClass) {
  BufferPool pool(Options(64 * kMiB));
  uintptr_t first = 0;
  {
    const BufferPool::Buffer buffer = pool.Allocate(kMiB + 100);
    EXPECT_FALSE(buffer.reused);
    first = Address(buffer);
  }
  EXPECT_EQ(pool.stats().cached_bytes, SizeClassBytes(kMiB + 100));
  EXPECT_EQ(pool.stats().cached_blocks, 1U);
  // Another size of the same class (1.25 MiB) gets the same block.
  const BufferPool::Buffer again = pool.Allocate(kMiB + kMiB / 8);
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(Address(again), first);
  const PoolStats stats = pool.stats();
  EXPECT_EQ(stats.hits, 1U);
  EXPECT_EQ(stats.misses, 1U);
  EXPECT_EQ(stats.cached_bytes, 0U);
  EXPECT_EQ(stats.cached_blocks, 0U);
}

TEST(BufferPoolTest, DifferentClassesDoNotAlias) {
  BufferPool pool(Options(64 * kMiB));
  uintptr_t small = 0;
  uintptr_t large = 0;
  {
    const BufferPool::Buffer a = pool.Allocate(kMiB);
    const BufferPool::Buffer b = pool.Allocate(3 * kMiB / 2);
    small = Address(a);
    large = Address(b);
  }
  // The 1.5 MiB block would hold 1 MiB, but a request takes only a block of its own class.
  const BufferPool::Buffer c = pool.Allocate(3 * kMiB / 2);
  const BufferPool::Buffer d = pool.Allocate(kMiB);
  EXPECT_EQ(Address(c), large);
  EXPECT_EQ(Address(d), small);
  const BufferPool::Buffer e = pool.Allocate(kMiB);  // the class's only block is in use
  EXPECT_FALSE(e.reused);
  EXPECT_NE(Address(e), small);
}

TEST(BufferPoolTest, LiveBuffersNeverOverlap) {
  BufferPool pool(Options(64 * kMiB));
  std::vector<BufferPool::Buffer> live;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (int round = 0; round < 3; ++round) {
    for (const size_t bytes : {100 * kKiB, 100 * kKiB, kMiB, 3 * kMiB, kMiB + 1}) {
      live.push_back(pool.Allocate(bytes));
      ranges.emplace_back(Address(live.back()), Address(live.back()) + bytes);
    }
    // Free every other one, so that the next round reuses some and allocates others.
    if (round < 2) {
      for (size_t i = 0; i < live.size(); i += 2) {
        live[i].storage.reset();
        ranges[i] = {0, 0};
      }
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i - 1].second == 0) continue;
    EXPECT_LE(ranges[i - 1].second, ranges[i].first);
  }
  EXPECT_GT(pool.stats().hits, 0U);
}

TEST(BufferPoolTest, BuffersAreAligned) {
  BufferPool pool(Options(64 * kMiB));
  for (const size_t bytes :
       {size_t{0}, size_t{1}, size_t{63}, 64 * kKiB - 1, 64 * kKiB + 1, kMiB + 7, 5 * kMiB + 3}) {
    for (int repeat = 0; repeat < 2; ++repeat) {  // fresh, then reused
      const BufferPool::Buffer buffer = pool.Allocate(bytes);
      ASSERT_NE(buffer.storage, nullptr);
      EXPECT_EQ(Address(buffer) % kBufferAlignment, 0U) << bytes;
    }
  }
}

TEST(BufferPoolTest, SmallBuffersBypassThePool) {
  BufferPool pool(Options(64 * kMiB));
  { const BufferPool::Buffer buffer = pool.Allocate(64 * kKiB - 1); }
  const BufferPool::Buffer buffer = pool.Allocate(64 * kKiB - 1);
  EXPECT_FALSE(buffer.reused);
  const PoolStats stats = pool.stats();
  EXPECT_EQ(stats.hits + stats.misses, 0U);
  EXPECT_EQ(stats.cached_bytes, 0U);
}

TEST(BufferPoolTest, CapEvictsTheLeastRecentlyFreed) {
  BufferPool pool(Options(2 * kMiB));
  std::array<uintptr_t, 3> addresses{};
  {
    std::array<BufferPool::Buffer, 3> buffers = {pool.Allocate(kMiB), pool.Allocate(kMiB),
                                                 pool.Allocate(kMiB)};
    for (size_t i = 0; i < 3; ++i) addresses[i] = Address(buffers[i]);
    for (auto& buffer : buffers) buffer.storage.reset();  // freed in order 0, 1, 2
  }
  PoolStats stats = pool.stats();
  EXPECT_EQ(stats.cached_bytes, 2 * kMiB);
  EXPECT_EQ(stats.cached_blocks, 2U);
  EXPECT_EQ(stats.evictions, 1U);
  // Block 0 was evicted; the cache hands out the newest first.
  const BufferPool::Buffer a = pool.Allocate(kMiB);
  const BufferPool::Buffer b = pool.Allocate(kMiB);
  const BufferPool::Buffer c = pool.Allocate(kMiB);
  EXPECT_EQ(Address(a), addresses[2]);
  EXPECT_EQ(Address(b), addresses[1]);
  EXPECT_TRUE(a.reused && b.reused);
  EXPECT_FALSE(c.reused);
  stats = pool.stats();
  EXPECT_EQ(stats.hits, 2U);
  EXPECT_EQ(stats.misses, 4U);
}

TEST(BufferPoolTest, EvictsOtherClassesToMakeRoom) {
  BufferPool pool(Options(3 * kMiB));
  { const BufferPool::Buffer small = pool.Allocate(kMiB); }
  { const BufferPool::Buffer large = pool.Allocate(5 * kMiB / 2); }
  const PoolStats stats = pool.stats();
  EXPECT_EQ(stats.cached_bytes, 5 * kMiB / 2);
  EXPECT_EQ(stats.evictions, 1U);
  EXPECT_FALSE(pool.Allocate(kMiB).reused);
}

TEST(BufferPoolTest, BufferLargerThanTheCapIsNeverCached) {
  BufferPool pool(Options(kMiB));
  { const BufferPool::Buffer buffer = pool.Allocate(2 * kMiB); }
  const PoolStats stats = pool.stats();
  EXPECT_EQ(stats.cached_bytes, 0U);
  EXPECT_EQ(stats.evictions, 1U);
  EXPECT_FALSE(pool.Allocate(2 * kMiB).reused);
}

TEST(BufferPoolTest, DisabledPoolAllocatesFromTheHeap) {
  BufferPool pool(Options(0));
  for (int i = 0; i < 3; ++i) {
    BufferPool::Buffer buffer = pool.Allocate(4 * kMiB);
    EXPECT_FALSE(buffer.reused);
    EXPECT_EQ(Address(buffer) % kBufferAlignment, 0U);
    std::memset(buffer.storage.get(), 0x5A, 4 * kMiB);  // the whole buffer is usable
  }
  const PoolStats stats = pool.stats();
  EXPECT_EQ(stats.hits + stats.misses + stats.evictions, 0U);
  EXPECT_EQ(stats.cached_bytes, 0U);
}

// Threads allocate, fill with their own pattern, check, and free buffers of a few classes under
// a cap small enough to evict all the time. A buffer handed to two owners at once, or freed
// while in use, shows up as a foreign pattern.
TEST(BufferPoolTest, ConcurrentAllocateAndFree) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 1500;
  const std::array<size_t, 5> sizes = {64 * kKiB, 100 * kKiB, 256 * kKiB, 300 * kKiB, kMiB};
  BufferPool pool(Options(2 * kMiB));
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 engine(static_cast<unsigned>(t));
      std::vector<std::pair<BufferPool::Buffer, size_t>> held;
      const auto pattern = static_cast<unsigned char>(t + 1);
      for (int i = 0; i < kIterations; ++i) {
        const size_t bytes = sizes[engine() % sizes.size()];
        BufferPool::Buffer buffer = pool.Allocate(bytes);
        std::memset(buffer.storage.get(), pattern, bytes);
        held.emplace_back(std::move(buffer), bytes);
        if (held.size() > 3) {
          // Check and free a random held buffer.
          const size_t victim = engine() % held.size();
          const auto* data =
              reinterpret_cast<const unsigned char*>(held[victim].first.storage.get());
          const size_t held_bytes = held[victim].second;
          if (std::count(data, data + held_bytes, pattern) != static_cast<ptrdiff_t>(held_bytes)) {
            ++corrupted;
          }
          held.erase(held.begin() + static_cast<ptrdiff_t>(victim));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(corrupted.load(), 0);
  const PoolStats stats = pool.stats();
  EXPECT_EQ(stats.hits + stats.misses, static_cast<uint64_t>(kThreads * kIterations));
  EXPECT_GT(stats.hits, 0U);
  EXPECT_LE(stats.cached_bytes, 2 * kMiB);
  EXPECT_GT(stats.evictions, 0U);
}

}  // namespace
}  // namespace autodist::tensor
