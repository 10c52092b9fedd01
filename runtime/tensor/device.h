// Where a tensor's storage lives: the host (the CPU engine's) or a GPU. Storage on a device other
// than the CPU comes from that kind's DeviceMemory, which its backend installs (the CUDA one:
// gpu/memory/cuda_tensor_memory.h), so that this module names no device library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace autodist::tensor {

enum class DeviceKind : uint8_t { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // which GPU; 0 for the CPU

  static Device Cpu() { return {}; }
  static Device Cuda(int index) { return {DeviceKind::kCuda, index}; }
  bool is_cpu() const { return kind == DeviceKind::kCpu; }
  bool operator==(const Device&) const = default;
};

// "cpu", "cuda:0".
std::string DeviceName(const Device& device);
// "cpu" or "cuda" (which GPU is not part of a kind).
std::string_view DeviceKindName(DeviceKind kind);
// The device named "cpu", "cuda" (GPU 0) or "cuda:N"; throws InvalidArgument naming `field` and
// the accepted forms otherwise.
Device ParseDevice(std::string_view name, std::string_view field);

// Memory of one kind of device, as tensors need it. Implementations are thread-safe.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` (> 0) of uninitialized memory on GPU `index`, freed when the last owner goes.
  virtual std::shared_ptr<std::byte[]> Allocate(size_t bytes, int index) = 0;  // NOLINT
  // Copies `bytes` from `source` on `from` to `destination` on `to`, one of them this kind's,
  // the other this kind's or the CPU; returns once the copy is complete, except a copy within
  // one device, which is ordered before the work queued on that device afterwards (by any thread)
  // as a kernel is.
  virtual void Copy(void* destination, const Device& to, const void* source, const Device& from,
                    size_t bytes) = 0;
  // Sets `bytes` at `data` on `device` to zero.
  virtual void Zero(void* data, const Device& device, size_t bytes) = 0;

  // Host bytes on their way to a device ahead of their use (input batches): `data` is the new
  // device memory, and `ready`, when set, what the device's work must be ordered after (Await)
  // before it reads `data`.
  struct Upload {
    std::shared_ptr<std::byte[]> data;  // NOLINT(*-avoid-c-arrays): storage, as Allocate's
    std::shared_ptr<void> ready;
  };
  // Starts copying `bytes` (> 0) at host `source` into new memory on `device`, where the
  // device can, so that the copy overlaps the device's compute (the CUDA backend: through pinned
  // memory, on a copy stream); returns once `source` may be reused. Thread-safe (a loader's
  // prefetch thread calls it). The default copies at once: Allocate, then Copy.
  virtual Upload UploadAhead(const void* source, size_t bytes, const Device& device);
  // Orders the device's work queued from now on (by any thread) after `upload`'s copy. The
  // default has nothing to order.
  virtual void Await(const Upload& upload, const Device& device);

  // Host memory that copies to and from this kind's devices run fastest through (CUDA:
  // page-locked, so that a copy is the device's DMA rather than the driver's staged one), for
  // host buffers that cross every step (GPU workers' staged gradients and variables); freed when
  // the last owner goes. Null (the default): nothing better than ordinary host memory.
  virtual std::shared_ptr<std::byte[]> AllocateHostStaging(size_t bytes);  // NOLINT

  // Makes `device` the one the calling thread's kernels go to (CUDA: cudaSetDevice), before a
  // session or an optimizer queues work there: a process driving several GPUs switches between
  // them. The default does nothing.
  virtual void Select(const Device& device);
};

// Installs the memory of `kind` (not kCpu); `memory` must outlive every tensor on that kind.
void InstallDeviceMemory(DeviceKind kind, DeviceMemory* memory);
// The memory of `device`'s kind; throws FailedPrecondition when none is installed (a build or
// a binary without that backend).
DeviceMemory& MemoryOf(const Device& device);
// Whether the memory of `kind` is installed (the CPU's always is).
bool HasMemory(DeviceKind kind);

}  // namespace autodist::tensor
