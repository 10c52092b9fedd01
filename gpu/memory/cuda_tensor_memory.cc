#include "gpu/memory/cuda_tensor_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/device/devices.h"
#include "gpu/device/stream.h"
#include "gpu/memory/pinned_buffer.h"
#include "gpu/memory/pinned_cache.h"
#include "runtime/common/error.h"
#include "runtime/tensor/device.h"

namespace autodist::gpu {
namespace {

// Freed tensor buffers of one GPU kept for reuse, by size. Every tensor on a GPU is made, used
// and freed in the order of that GPU's one tensor stream, so a buffer freed there can serve the
// next allocation at once: work queued before the free is done with it before work queued after
// the reuse starts. This is what PyTorch's caching allocator does; a lookup here costs a map
// access, where each cudaMallocFromPoolAsync and cudaFreeAsync is a driver call (about a
// microsecond, which small kernels notice: performance.md, "GPU").
class BufferCache {
 public:
  // Sizes are rounded up to this, so that buffers of nearly equal sizes are shared.
  static constexpr size_t kGranule = 512;

  static size_t Rounded(size_t bytes) { return (bytes + kGranule - 1) / kGranule * kGranule; }

  // A cached buffer of exactly `bytes` (rounded), if there is one.
  std::optional<DeviceBuffer> Take(size_t bytes) {
    const std::lock_guard lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return std::nullopt;
    DeviceBuffer buffer = std::move(it->second.back());
    it->second.pop_back();
    cached_bytes_ -= bytes;
    CountLent(bytes);
    return buffer;
  }

  // A buffer fresh from the pool goes to a tensor.
  void Lent(size_t bytes) {
    const std::lock_guard lock(mutex_);
    CountLent(bytes);
  }

  // A buffer lent outside the cache (an upload's) goes back to the pool.
  void Dropped(size_t bytes) {
    const std::lock_guard lock(mutex_);
    live_bytes_ -= bytes;
  }

  // A tensor's buffer comes back.
  void Put(DeviceBuffer buffer) {
    const std::lock_guard lock(mutex_);
    live_bytes_ -= buffer.bytes();
    cached_bytes_ += buffer.bytes();
    free_[buffer.bytes()].push_back(std::move(buffer));
  }

  TensorMemoryStats Stats() {
    const std::lock_guard lock(mutex_);
    return {live_bytes_, peak_live_bytes_, cached_bytes_};
  }

  // Frees every cached buffer (to the pool, in stream order); returns whether there were any.
  bool Flush() {
    const std::lock_guard lock(mutex_);
    const bool any = cached_bytes_ > 0;
    free_.clear();
    cached_bytes_ = 0;
    return any;
  }

 private:
  std::mutex mutex_;
  void CountLent(size_t bytes) {
    live_bytes_ += bytes;
    peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
  }

  std::unordered_map<size_t, std::vector<DeviceBuffer>> free_;
  uint64_t cached_bytes_ = 0;
  uint64_t live_bytes_ = 0;  // held by tensors
  uint64_t peak_live_bytes_ = 0;
};

// Page-locked staging buffers of one GPU's uploads, used in turn; each is reused once the copy
// out of it (its event) has finished.
class PinnedStages {
 public:
  static constexpr size_t kStages = 4;

  // A stage of at least `bytes` whose last copy has left it (waiting for the oldest when all are
  // busy).
  PinnedBuffer& Next(size_t bytes, Event*& copied) {
    Stage& stage = stages_[next_];
    next_ = (next_ + 1) % kStages;
    if (stage.used) stage.copied.Synchronize();
    if (stage.buffer.bytes() < bytes) stage.buffer = PinnedBuffer(bytes);
    stage.used = true;
    copied = &stage.copied;
    return stage.buffer;
  }

 private:
  struct Stage {
    PinnedBuffer buffer;
    Event copied;
    bool used = false;
  };
  std::array<Stage, kStages> stages_;
  size_t next_ = 0;
};

// One GPU's tensor stream, pool and cache, and the copy stream and staging of its uploads.
struct GpuContext {
  std::unique_ptr<Stream> stream;
  std::unique_ptr<DevicePool> pool;
  std::unique_ptr<BufferCache> cache;
  std::unique_ptr<Stream> copy_stream;
  std::unique_ptr<std::mutex> upload_mutex;  // uploads come from the loaders' threads
  std::unique_ptr<PinnedStages> stages;

  DeviceBuffer Allocate(size_t bytes) const {
    const size_t rounded = BufferCache::Rounded(bytes);
    if (std::optional<DeviceBuffer> cached = cache->Take(rounded)) return std::move(*cached);
    DeviceBuffer fresh = [&] {
      try {
        return pool->Allocate(rounded, stream->get());
      } catch (const Error& error) {
        // Out of memory with buffers cached: give them back and try once more.
        if (error.code() != ErrorCode::kUnavailable || !cache->Flush()) throw;
        return pool->Allocate(rounded, stream->get());
      }
    }();
    cache->Lent(rounded);
    return fresh;
  }
};

class CudaTensorMemory final : public tensor::DeviceMemory {
 public:
  GpuContext& Context(int index) {
    const std::lock_guard lock(mutex_);
    auto it = contexts_.find(index);
    if (it != contexts_.end()) return it->second;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    AD_CHECK(status == cudaSuccess && index >= 0 && index < count, kFailedPrecondition,
             "a tensor on cuda:{} needs GPU {}, but this process sees {}", index, index,
             DescribeGpus(DiscoverGpus()));
    UseGpu(index);
    GpuContext context;
    context.stream = std::make_unique<Stream>();
    context.pool = std::make_unique<DevicePool>();
    context.cache = std::make_unique<BufferCache>();
    context.copy_stream = std::make_unique<Stream>();
    context.upload_mutex = std::make_unique<std::mutex>();
    context.stages = std::make_unique<PinnedStages>();
    return contexts_.emplace(index, std::move(context)).first->second;
  }

  std::shared_ptr<std::byte[]> Allocate(size_t bytes, int index) override {  // NOLINT
    GpuContext& context = Context(index);
    auto* buffer = new DeviceBuffer(context.Allocate(bytes));
    BufferCache* cache = context.cache.get();
    return {static_cast<std::byte*>(buffer->data()), [buffer, cache](std::byte* /*data*/) {
              cache->Put(std::move(*buffer));
              delete buffer;
            }};
  }

  void Copy(void* destination, const tensor::Device& to, const void* source,
            const tensor::Device& from, size_t bytes) override {
    const int index = to.is_cpu() ? from.index : to.index;
    cudaStream_t stream = Context(index).stream->get();
    cudaError_t status = cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, stream);
    // Within one GPU the copy is ordered on its tensor stream like a kernel, and every later
    // reader and writer of either buffer is too: only a copy that involves the host, or another
    // GPU's stream, must be complete before the call returns.
    if (status == cudaSuccess && !(to == from)) status = cudaStreamSynchronize(stream);
    // Every step copies its feeds and its loss: the message is formatted only on failure.
    if (status != cudaSuccess) {
      CheckCuda(status, fmt::format("copying {} bytes from {} to {}", bytes,
                                    tensor::DeviceName(from), tensor::DeviceName(to)));
    }
  }

  // The copy runs on the GPU's copy stream, from a pinned stage, into memory the pool orders on
  // that stream (not a buffer from the tensor stream's cache, which the copy would have to wait
  // for). The tensor stream waits for the copy where the batch is taken (Await); the buffer is
  // freed on the copy stream once the tensor stream's work queued before its release is done.
  Upload UploadAhead(const void* source, size_t bytes, const tensor::Device& device) override {
    GpuContext& context = Context(device.index);
    const std::lock_guard lock(*context.upload_mutex);
    UseGpu(device.index);  // a loader's thread: its current GPU may be another
    cudaStream_t copy = context.copy_stream->get();
    const size_t rounded = BufferCache::Rounded(bytes);
    auto target = std::make_unique<DeviceBuffer>(context.pool->Allocate(rounded, copy));
    Event* copied = nullptr;
    PinnedBuffer& stage = context.stages->Next(bytes, copied);
    std::memcpy(stage.data(), source, bytes);
    CopyAsync(target->data(), stage.data(), bytes, copy, "uploading a batch");
    copied->Record(copy);
    auto ready = std::make_shared<Event>();
    ready->Record(copy);
    cudaStream_t tensor_stream = context.stream->get();
    BufferCache* cache = context.cache.get();
    cache->Lent(rounded);
    Upload upload;
    auto* data = static_cast<std::byte*>(target->data());
    upload.data = std::shared_ptr<std::byte[]>(  // NOLINT(*-avoid-c-arrays)
        data, [buffer = target.release(), tensor_stream, copy, cache, rounded](std::byte*) {
          // A deleter must not throw: where the event fails, the slow and sure order.
          cudaEvent_t read = nullptr;
          const bool ordered =
              cudaEventCreateWithFlags(&read, cudaEventDisableTiming) == cudaSuccess &&
              cudaEventRecord(read, tensor_stream) == cudaSuccess &&
              cudaStreamWaitEvent(copy, read, 0) == cudaSuccess;
          if (!ordered) cudaStreamSynchronize(tensor_stream);
          if (read != nullptr) cudaEventDestroy(read);
          cache->Dropped(rounded);
          delete buffer;  // freed in the copy stream's order, after the reads
        });
    upload.ready = std::move(ready);
    return upload;
  }

  void Select(const tensor::Device& device) override { UseGpu(device.index); }

  void Await(const Upload& upload, const tensor::Device& device) override {
    if (upload.ready == nullptr) return;
    static_cast<const Event*>(upload.ready.get())->MakeWait(Context(device.index).stream->get());
  }

  // Pinned, from a cache: GPU workers stage gradients of the same sizes every step. Where the
  // machine will not lock that much memory, ordinary host memory does the same job, slower.
  std::shared_ptr<std::byte[]> AllocateHostStaging(size_t bytes) override {  // NOLINT
    try {
      return staging_.Allocate(bytes);
    } catch (const Error&) {
      cudaGetLastError();  // cleared: the failed allocation is not a sticky error
      return nullptr;
    }
  }

  void Zero(void* data, const tensor::Device& device, size_t bytes) override {
    const cudaError_t status = cudaMemsetAsync(data, 0, bytes, Context(device.index).stream->get());
    if (status != cudaSuccess) {
      CheckCuda(status, fmt::format("zeroing {} bytes on {}", bytes, tensor::DeviceName(device)));
    }
  }

 private:
  std::mutex mutex_;
  std::map<int, GpuContext> contexts_;  // node-based: references stay valid
  // Idle staging kept for the next step: a worker's gradients and variables are staged again.
  PinnedCache staging_{size_t{1} << 30};
};

CudaTensorMemory& Memory() {
  // Never destroyed: tensors held by static objects may be freed after other statics are gone.
  static auto* memory = new CudaTensorMemory();
  return *memory;
}

}  // namespace

void InstallCudaTensorMemory() {
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, &Memory());
}

cudaStream_t TensorStream(int index) { return Memory().Context(index).stream->get(); }

DevicePool& TensorPool(int index) { return *Memory().Context(index).pool; }

TensorMemoryStats TensorMemory(int index) { return Memory().Context(index).cache->Stats(); }

}  // namespace autodist::gpu
