// BufferPool: a caching allocator for large tensor buffers, the CPU counterpart of PyTorch's
// caching allocator or ONNX Runtime's arena. A training step allocates the same shapes every
// step; handing a freed buffer to the next request of its size class keeps its pages mapped,
// where a fresh heap block of that size is a fresh mapping that takes one page fault per 4 KiB
// page on first write (docs/performance.md, "Tensor buffer pool").
//
// Thread-safe: the engine, the prefetch thread, PS servers and communication threads all share
// the process-wide pool (runtime/tensor/storage.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace autodist::tensor {

// Every buffer, pooled or not, is aligned to this many bytes (for vectorized kernels).
inline constexpr size_t kBufferAlignment = 64;

// A shared buffer, the type of Tensor's storage. The array form is what gives get() its meaning
// of "the bytes" (no operator->, no single-object delete).
using Storage = std::shared_ptr<std::byte[]>;  // NOLINT(modernize-avoid-c-arrays)

struct PoolOptions {
  // Most bytes kept in idle cached buffers; freeing past it evicts the least recently freed.
  // 0 disables caching: every buffer comes from and goes back to the heap.
  size_t max_cached_bytes = size_t{1} << 30;
  // Buffers below this size go straight to the heap: glibc serves them from its arenas, which
  // stay mapped, so they fault rarely and pooling would only add a lock.
  size_t min_pooled_bytes = size_t{64} << 10;
};

struct PoolStats {
  size_t cached_bytes = 0;  // idle buffers held for reuse
  size_t cached_blocks = 0;
  uint64_t hits = 0;       // pooled-size requests served from the cache
  uint64_t misses = 0;     // pooled-size requests that went to the heap
  uint64_t evictions = 0;  // freed buffers handed back to the heap to stay under the cap
};

// The bytes actually reserved for a pooled request of `bytes` (>= min_pooled_bytes): rounded up
// to one of four classes per power of two (2^p, 1.25·2^p, 1.5·2^p, 1.75·2^p), so a buffer wastes
// at most a fifth of its size and tensors of nearly equal size share a class.
size_t SizeClassBytes(size_t bytes);

class BufferPool {
 public:
  struct Buffer {
    Storage storage;
    bool reused = false;  // served from the cache: its pages are mapped already
  };

  explicit BufferPool(PoolOptions options);
  // Frees the idle buffers. A pool must outlive every buffer it handed out (their deleters return
  // them here); the process-wide pool is never destroyed for that reason.
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // At least `bytes` bytes (a distinct pointer even for 0), aligned to kBufferAlignment,
  // uninitialized: a reused buffer holds whatever its last user wrote. Releasing the last
  // shared_ptr returns the buffer to the pool.
  Buffer Allocate(size_t bytes);

  PoolStats stats() const;
  const PoolOptions& options() const { return options_; }

 private:
  struct Idle {
    std::byte* memory;
    uint64_t freed_at;  // release order, for evicting the least recently freed
  };

  struct Evicted {
    std::byte* memory;
    size_t bytes;
  };

  bool Pooled(size_t bytes) const;
  void Release(std::byte* memory, size_t class_bytes);
  // Removes the least recently freed idle buffer from the cache and returns it, to be unmapped
  // once the lock is released (lock held).
  Evicted EvictOldestLocked();

  const PoolOptions options_;
  mutable std::mutex mutex_;
  // Idle buffers by class size; each deque runs oldest to newest, and reuse takes the newest,
  // whose memory is the likeliest to still be in cache.
  std::map<size_t, std::deque<Idle>> idle_;
  PoolStats stats_;
  uint64_t releases_ = 0;
};

}  // namespace autodist::tensor
