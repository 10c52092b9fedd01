// Stand-ins for a GPU's memory that live in host memory, for CPU tests of what tensors on a device
// and host staging do (the real memory is tested in tests/gpu on a GPU machine).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/tensor/device.h"

namespace autodist::tensor::testing {

// A "GPU" whose memory is host memory, counting what it is asked to do.
class HostBackedMemory final : public DeviceMemory {
 public:
  std::shared_ptr<std::byte[]> Allocate(size_t bytes, int /*index*/) override {  // NOLINT
    ++allocations;
    return std::shared_ptr<std::byte[]>(new std::byte[bytes]);  // NOLINT
  }
  void Copy(void* destination, const Device& /*to*/, const void* source, const Device& /*from*/,
            size_t bytes) override {
    ++copies;
    std::memcpy(destination, source, bytes);
  }
  void Zero(void* data, const Device& /*device*/, size_t bytes) override {
    ++zeroes;
    std::memset(data, 0, bytes);
  }
  int allocations = 0;
  int copies = 0;
  int zeroes = 0;
};

// The same "GPU" with host staging memory of its own, counting what it lends.
class StagingMemory final : public DeviceMemory {
 public:
  std::shared_ptr<std::byte[]> Allocate(size_t bytes, int index) override {  // NOLINT
    return device.Allocate(bytes, index);
  }
  void Copy(void* destination, const Device& to, const void* source, const Device& from,
            size_t bytes) override {
    device.Copy(destination, to, source, from, bytes);
  }
  void Zero(void* data, const Device& where, size_t bytes) override {
    device.Zero(data, where, bytes);
  }
  std::shared_ptr<std::byte[]> AllocateHostStaging(size_t bytes) override {  // NOLINT
    staged_bytes += bytes;
    auto storage = std::shared_ptr<std::byte[]>(new std::byte[bytes]);  // NOLINT
    lent.push_back(storage.get());
    return storage;
  }
  HostBackedMemory device;
  size_t staged_bytes = 0;
  std::vector<const std::byte*> lent;
};

}  // namespace autodist::tensor::testing
