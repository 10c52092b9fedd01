// Compression inside the all-reduce on the replicas' devices (sync/device_all_reduce_part.h): a
// fusion group's gradients lie in one float32 buffer where the replica is, each member at its
// offset, and the compressor replaces the members by their sum over the communicator's ranks,
// there. A device's backend registers the kinds it runs (CUDA: gpu/compress/, the Horovod pair);
// on the CPU every registered compressor runs, handed views of the buffer, so that the device
// path computes on the CPU exactly what the host path does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/compress/compressor.h"
#include "runtime/tensor/device.h"
#include "runtime/tensor/tensor.h"

namespace autodist::compress {

// One gradient of a group's buffer.
struct FlatMember {
  std::string name;     // the shard's name: per-tensor state (residuals) is kept by it
  int64_t offset = 0;   // elements into the buffer
  tensor::Shape shape;  // the gradient's
};

// One compressor per rank and group; not shared between threads.
class FlatCompressor {
 public:
  virtual ~FlatCompressor() = default;

  // Replaces `members` (those with a gradient this step, in group order) of `buffer` (float32,
  // on this compressor's device) by their sum over the ranks of `communicator` (approximate for
  // the lossy kinds); elements of no member may change. `group` and `step` as in
  // Compressor::Reduce. Every rank calls it with the same members in the same order.
  virtual void Reduce(const std::string& group, tensor::Tensor& buffer,
                      const std::vector<FlatMember>& members,
                      collective::Communicator& communicator, int64_t step) = 0;

  // Totals over every Reduce, as Compressor::stats.
  virtual CompressionStats stats() const = 0;
};

using FlatCompressorFactory =
    std::function<std::unique_ptr<FlatCompressor>(const CompressorOptions& options)>;

// Adds the flat form of `kind` on devices of `device` (not the CPU, whose forms come from the
// registered compressors); a second registration is kInternal.
void RegisterFlatCompressor(CompressorKind kind, tensor::DeviceKind device,
                            FlatCompressorFactory make);

// Whether `kind` runs on devices of `device` (on the CPU: whether it is registered at all).
bool HasFlatCompressor(CompressorKind kind, tensor::DeviceKind device);

// The flat form of options.kind for `device`; FailedPrecondition when it has none.
std::unique_ptr<FlatCompressor> MakeFlatCompressor(const CompressorOptions& options,
                                                   tensor::DeviceKind device);

}  // namespace autodist::compress
