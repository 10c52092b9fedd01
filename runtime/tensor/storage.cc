#include "runtime/tensor/storage.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "runtime/common/error.h"

namespace autodist::tensor {
namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL and are left alone
#endif

// madvise over the whole `alignment`-sized blocks inside [data, data + bytes): the allocator's
// neighbours of the buffer are none of our business.
void AdviseInside(std::byte* data, size_t bytes, uintptr_t alignment, int advice) {
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (start + alignment - 1) & ~(alignment - 1);
  const uintptr_t last = (start + bytes) & ~(alignment - 1);
  if (last > first) madvise(data + (first - start), last - first, advice);
}

// Maps in the pages of a fresh buffer that is about to be overwritten whole (a tensor received
// from the network). A large fresh buffer is a fresh mapping (glibc hands out allocations above
// 32 MiB with mmap, and smaller ones often come back from the OS too), so the writes would
// otherwise take one page fault per 4 KiB page, on a virtual machine the largest single cost of
// receiving a tensor (bench/ps_throughput_bench: 4096 faults per 16 MiB). One madvise populates
// all pages at once; above 32 MiB the mapping is the buffer's own, so it may also ask for huge
// pages (fewer pages to map and fewer TLB misses). Both are hints: failures (old kernels) change
// nothing but speed. A buffer reused from the pool is mapped already and never comes here.
void Populate(std::byte* data, size_t bytes) {
  constexpr size_t kMinBytes = size_t{1} << 20;    // below: a few faults, not worth a syscall
  constexpr size_t kHugeBytes = size_t{32} << 20;  // glibc's largest mmap threshold
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  if (bytes < kMinBytes) return;
  if (bytes >= kHugeBytes) AdviseInside(data, bytes, kHugePage, MADV_HUGEPAGE);
  AdviseInside(data, bytes, static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)), MADV_POPULATE_WRITE);
}

// glibc raises its mmap threshold (and the heap's trim threshold, to twice that) each time a
// program frees an mmapped chunk. Before the pool, freed tensors did that, and it is what kept
// gRPC's and protobuf's megabyte-sized message buffers on the heap, mapped, from one step to the
// next. With tensors in the pool glibc never sees such a free, the threshold stays at its
// 128 KiB start, and every message buffer is a fresh mapping faulting in page by page again
// (bench/ps_throughput_bench: a 1 MiB push+pull went from 2 ms to 11-19 ms, at 600-1,100 faults
// per step). Fixing the thresholds where the adaptation would have taken them keeps those
// buffers on the heap; tensors of 64 KiB and more never reach malloc, so the heap stays small.
void KeepMessageBuffersOnTheHeap() {
  constexpr int kMmapThreshold = 8 << 20;  // above the 1 MiB pieces and gRPC's buffers for them
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, 2 * kMmapThreshold);  // glibc's own ratio
}

}  // namespace

PoolOptions ParseTensorPoolOptions(const char* megabytes) {
  PoolOptions options;
  if (megabytes == nullptr) return options;
  // A cap beyond any machine's memory is a typo, and the conversion to bytes must not overflow.
  constexpr uint64_t kMaxMegabytes = uint64_t{1} << 24;  // 16 TiB
  const std::string_view text(megabytes);
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  AD_CHECK(!text.empty() && error == std::errc() && end == text.data() + text.size() &&
               value <= kMaxMegabytes,
           kInvalidArgument,
           "environment variable {}: expected a whole number of MiB up to {} (0 disables the "
           "tensor buffer pool), got '{}'",
           kTensorPoolEnv, kMaxMegabytes, text);
  options.max_cached_bytes = static_cast<size_t>(value) << 20;
  return options;
}

namespace {

struct ProcessPool {
  std::mutex mutex;  // guards both below
  PoolOptions options;
  BufferPool* pool = nullptr;
};

ProcessPool& Process() {
  static ProcessPool process;
  return process;
}

}  // namespace

void ConfigureTensorPool(const PoolOptions& options) {
  ProcessPool& process = Process();
  const std::lock_guard lock(process.mutex);
  const bool same = process.pool == nullptr ||
                    (process.pool->options().max_cached_bytes == options.max_cached_bytes &&
                     process.pool->options().min_pooled_bytes == options.min_pooled_bytes);
  AD_CHECK(same, kFailedPrecondition,
           "the tensor buffer pool is in use already; configure it before the first tensor");
  process.options = options;
}

BufferPool& TensorBufferPool() {
  // Leaked on purpose: a static tensor destroyed after the pool would return its buffer to a dead
  // pool. The idle buffers it holds at exit go back to the OS with the process. Allocation takes
  // this path every time, so it reads the pointer without the lock once it is set.
  static std::atomic<BufferPool*> created{nullptr};
  if (BufferPool* pool = created.load(std::memory_order_acquire)) return *pool;
  ProcessPool& process = Process();
  const std::lock_guard lock(process.mutex);
  if (process.pool == nullptr) {
    process.pool = new BufferPool(process.options);
    if (process.options.max_cached_bytes > 0) KeepMessageBuffersOnTheHeap();
    created.store(process.pool, std::memory_order_release);
  }
  return *process.pool;
}

Storage AllocateStorage(size_t bytes, Pages pages) {
  BufferPool::Buffer buffer = TensorBufferPool().Allocate(bytes);
  if (pages == Pages::kMapped && !buffer.reused) Populate(buffer.storage.get(), bytes);
  return std::move(buffer.storage);
}

}  // namespace autodist::tensor
