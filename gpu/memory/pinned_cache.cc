#include "gpu/memory/pinned_cache.h"

#include <utility>

namespace autodist::gpu {

std::shared_ptr<std::byte[]> PinnedCache::Allocate(size_t bytes) {  // NOLINT(*-avoid-c-arrays)
  const size_t rounded = (bytes + kGranule - 1) / kGranule * kGranule;
  PinnedBuffer buffer;
  {
    const std::lock_guard lock(mutex_);
    auto it = free_.find(rounded);
    if (it != free_.end() && !it->second.empty()) {
      buffer = std::move(it->second.back());
      it->second.pop_back();
      idle_bytes_ -= rounded;
    }
  }
  if (buffer.data() == nullptr) buffer = PinnedBuffer(rounded);  // throws naming the size
  auto* held = new PinnedBuffer(std::move(buffer));
  return {static_cast<std::byte*>(held->data()), [this, held](std::byte* /*data*/) {
            // A deleter must not throw: a buffer the cache cannot take back is freed.
            try {
              Return(std::move(*held));
            } catch (...) {  // NOLINT(bugprone-empty-catch): freed below instead
            }
            delete held;
          }};
}

void PinnedCache::Return(PinnedBuffer buffer) {
  const std::lock_guard lock(mutex_);
  if (idle_bytes_ + buffer.bytes() > max_idle_bytes_) return;  // freed as `buffer` goes
  idle_bytes_ += buffer.bytes();
  free_[buffer.bytes()].push_back(std::move(buffer));
}

size_t PinnedCache::idle_bytes() const {
  const std::lock_guard lock(mutex_);
  return idle_bytes_;
}

}  // namespace autodist::gpu
