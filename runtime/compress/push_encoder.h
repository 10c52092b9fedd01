// The worker's side of compressed parameter-server pushes: a dense float32 gradient is compressed
// by its registered compressor (float16 halves, or its top-k entries), with error feedback where
// the compressor has it, so that what one step's push left out is added to the next one's.
// Semantics: docs/compression.md. The parameter-server client puts the result on the wire.
//
// Residuals belong to one stream of pushes: one tensor (variable or shard) pushed by one replica
// stream (its first_replica: a single replica, or a worker's proxy sum) to one server. A
// parameter-server client talks to one server, so it keeps one PushEncoder, keyed by
// (first_replica, name).
//
// A gradient on a device (a GPU worker's, handed over where backward left it) is compressed
// there, by the device's registered encoder (device_push_encoder.h), into the same EncodedPush;
// its stream's residual then lives on that device.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/compress/compressor.h"
#include "runtime/compress/device_push_encoder.h"
#include "runtime/compress/push_encoding.h"
#include "runtime/tensor/tensor.h"

namespace autodist::compress {

// Throws InvalidArgument naming `what` and the tensor unless a parameter server can take pushes
// compressed with options.kind (not PowerSGD) and, for TopK, options.fraction is in (0, 1].
void CheckPushCompression(const std::string& what, const std::string& name,
                          const CompressorOptions& options);

// Thread-safe: pushes of different streams run concurrently; pushes of one stream are
// serialized per tensor (a stream pushes its steps one after another anyway).
class PushEncoder {
 public:
  // Compresses `dense` (float32) as options.kind does into `out`, updating the stream's
  // residual; a tensor on a device is compressed there. Throws InvalidArgument naming `what` and
  // the tensor for a tensor that is not float32, for a kind that does not compress pushes
  // (CheckPushCompression; NoneCompressor pushes are sent as they are, without an encoder), and
  // FailedPrecondition when a tensor's element count or device differs from the one its stream
  // was made for, or its device kind has no encoder for the kind.
  void Encode(const std::string& what, int first_replica, const std::string& name,
              const tensor::Tensor& dense, const CompressorOptions& options, EncodedPush& out);

  // A host copy of a stream's residual (wherever it lives); nullopt before its first
  // error-feedback push, and for kinds without error feedback.
  std::optional<std::vector<float>> Residual(int first_replica, const std::string& name) const;

 private:
  struct Stream {
    std::mutex mutex;       // held while the state is read and replaced
    tensor::Device device;  // where the stream's gradients are, and its state
    int64_t elements = 0;
    bool error_feedback = false;
    PushState state;                              // on the host: the residual and scratch
    std::unique_ptr<DevicePushStream> on_device;  // on a device: its encoder and state
  };

  // The stream's state, made on first use for `elements` on `device` (a zero residual); throws
  // FailedPrecondition when the stream exists for another size or device.
  Stream& StreamFor(const std::string& what, int first_replica, const std::string& name,
                    int64_t elements, const tensor::Device& device,
                    const CompressorOptions& options);

  mutable std::mutex mutex_;  // guards the map, not the streams
  std::map<std::pair<int, std::string>, std::unique_ptr<Stream>> streams_;
};

}  // namespace autodist::compress
