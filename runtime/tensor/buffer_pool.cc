#include "runtime/tensor/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <new>
#include <utility>

namespace autodist::tensor {
namespace {

size_t RoundUp(size_t bytes, size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

// An unpooled buffer, as tensors had before the pool: the heap's, freed on release.
Storage HeapStorage(size_t bytes) {
  // Rounded so that a zero-byte tensor still has a distinct, valid pointer.
  const size_t rounded = RoundUp(std::max<size_t>(bytes, 1), kBufferAlignment);
  return {static_cast<std::byte*>(::operator new(rounded, std::align_val_t(kBufferAlignment))),
          [](std::byte* memory) { ::operator delete(memory, std::align_val_t(kBufferAlignment)); }};
}

// Pooled blocks are mapped directly rather than taken from malloc: an evicted block goes back to
// the OS at once (a block in the middle of glibc's heap could not), and the heap is left to the
// small and non-tensor allocations. Mappings are page-aligned, more than kBufferAlignment.
std::byte* MapBlock(size_t bytes) {
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  return static_cast<std::byte*>(memory);
}

void UnmapBlock(std::byte* memory, size_t bytes) { munmap(memory, bytes); }

}  // namespace

size_t SizeClassBytes(size_t bytes) {
  // Past this the rounding below could wrap; no allocation of that size can succeed anyway.
  if (bytes > std::numeric_limits<size_t>::max() / 4) throw std::bad_alloc();
  bytes = std::max(bytes, kBufferAlignment);
  const size_t power = std::bit_floor(bytes);
  const size_t step = power / 4;  // four classes between one power of two and the next
  return RoundUp(RoundUp(bytes, step), kBufferAlignment);
}

BufferPool::BufferPool(PoolOptions options) : options_(options) {}

BufferPool::~BufferPool() {
  for (auto& [class_bytes, blocks] : idle_) {
    for (const Idle& block : blocks) UnmapBlock(block.memory, class_bytes);
  }
}

bool BufferPool::Pooled(size_t bytes) const {
  return options_.max_cached_bytes > 0 && bytes >= options_.min_pooled_bytes && bytes > 0;
}

BufferPool::Buffer BufferPool::Allocate(size_t bytes) {
  if (!Pooled(bytes)) return {HeapStorage(bytes), false};
  const size_t class_bytes = SizeClassBytes(bytes);
  std::byte* memory = nullptr;
  {
    const std::lock_guard lock(mutex_);
    const auto found = idle_.find(class_bytes);
    if (found != idle_.end()) {
      memory = found->second.back().memory;
      found->second.pop_back();
      if (found->second.empty()) idle_.erase(found);
      stats_.cached_bytes -= class_bytes;
      --stats_.cached_blocks;
      ++stats_.hits;
    } else {
      ++stats_.misses;
    }
  }
  const bool reused = memory != nullptr;
  if (!reused) {
    try {
      memory = MapBlock(class_bytes);
    } catch (const std::bad_alloc&) {
      // Idle buffers of other classes are memory nobody uses: give them back and try once more.
      std::vector<Evicted> idle;
      {
        const std::lock_guard lock(mutex_);
        while (stats_.cached_blocks > 0) idle.push_back(EvictOldestLocked());
      }
      for (const Evicted& block : idle) UnmapBlock(block.memory, block.bytes);
      memory = MapBlock(class_bytes);
    }
  }
  // Should the control block's allocation throw, shared_ptr calls the deleter, which returns the
  // buffer to the cache: nothing leaks.
  return {Storage(memory, [this, class_bytes](std::byte* block) { Release(block, class_bytes); }),
          reused};
}

void BufferPool::Release(std::byte* memory, size_t class_bytes) {
  // Evicted buffers are freed after the lock is dropped: returning a large one to the OS is a
  // munmap, slow enough that other threads should not wait for it.
  std::vector<Evicted> evicted;
  {
    const std::lock_guard lock(mutex_);
    if (class_bytes > options_.max_cached_bytes) {
      evicted.push_back({memory, class_bytes});  // could never be cached
      ++stats_.evictions;
    } else {
      while (stats_.cached_bytes + class_bytes > options_.max_cached_bytes) {
        evicted.push_back(EvictOldestLocked());
      }
      idle_[class_bytes].push_back({memory, ++releases_});
      stats_.cached_bytes += class_bytes;
      ++stats_.cached_blocks;
    }
  }
  for (const Evicted& block : evicted) UnmapBlock(block.memory, block.bytes);
}

BufferPool::Evicted BufferPool::EvictOldestLocked() {
  // A scan over the classes in use: there are few (a model has a few dozen distinct tensor
  // sizes), and eviction happens only when the cap is reached.
  auto oldest = idle_.end();
  for (auto it = idle_.begin(); it != idle_.end(); ++it) {
    if (oldest == idle_.end() || it->second.front().freed_at < oldest->second.front().freed_at) {
      oldest = it;
    }
  }
  const Evicted evicted{oldest->second.front().memory, oldest->first};
  stats_.cached_bytes -= oldest->first;
  --stats_.cached_blocks;
  ++stats_.evictions;
  oldest->second.pop_front();
  if (oldest->second.empty()) idle_.erase(oldest);
  return evicted;
}

PoolStats BufferPool::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace autodist::tensor
