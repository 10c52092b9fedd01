// Page-locked host memory lent out as tensor storage (DeviceMemory::AllocateHostStaging) and kept
// for reuse: pinning is a system call that maps and locks every page (milliseconds for a large
// buffer), while GPU workers stage gradients of the same sizes every step.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu/memory/pinned_buffer.h"

namespace autodist::gpu {

class PinnedCache {
 public:
  // Keeps at most `max_idle_bytes` of returned buffers; what would exceed it is freed.
  explicit PinnedCache(size_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}
  PinnedCache(const PinnedCache&) = delete;
  PinnedCache& operator=(const PinnedCache&) = delete;

  // At least `bytes` (> 0) of pinned host memory, uninitialized and page-aligned; back to the
  // cache when the last owner drops it. The cache must outlive every buffer it lent.
  std::shared_ptr<std::byte[]> Allocate(size_t bytes);  // NOLINT(*-avoid-c-arrays)

  size_t idle_bytes() const;

  // Sizes are rounded up to this, so that buffers of nearly equal sizes are shared.
  static constexpr size_t kGranule = 4096;

 private:
  void Return(PinnedBuffer buffer);

  const size_t max_idle_bytes_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<PinnedBuffer>> free_;  // by (rounded) size
  size_t idle_bytes_ = 0;
};

}  // namespace autodist::gpu
