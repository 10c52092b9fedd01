// Parameter-server pushes compressed where a GPU worker's gradient is, before it crosses to the
// host: the float16 halves or the top-k pairs are what the device-to-host copy moves (half, or
// a fraction, of the float32 bytes), and the error-feedback residual stays on the device beside
// the gradient. A device's backend registers the kinds it encodes; the result is the same
// EncodedPush the host encoder makes from the same numbers, bit for bit (push_encoder.h), so a
// server cannot tell the two apart.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/compress/compressor.h"
#include "runtime/compress/push_encoding.h"
#include "runtime/tensor/device.h"
#include "runtime/tensor/tensor.h"

namespace autodist::compress {

// One stream of pushes (one tensor, one replica stream, one server; push_encoder.h) on one
// device. Not shared between threads (PushEncoder serializes a stream's pushes).
class DevicePushStream {
 public:
  virtual ~DevicePushStream() = default;

  // Compresses `dense` (float32, on this stream's device, with the element count the stream was
  // made for) into `out`, on the host when this returns, updating the residual on the device.
  virtual void Encode(const tensor::Tensor& dense, const CompressorOptions& options,
                      EncodedPush& out) = 0;

  // A host copy of the residual; empty for a kind without error feedback.
  virtual std::vector<float> Residual() = 0;
};

// Makes the stream of a tensor of `elements` float32 elements on `device`, its residual zero.
using DevicePushStreamFactory = std::function<std::unique_ptr<DevicePushStream>(
    const tensor::Device& device, int64_t elements, const CompressorOptions& options)>;

// Adds the push encoder of `kind` on devices of `device` (not the CPU, whose pushes the host
// encoder compresses); a second registration is kInternal.
void RegisterDevicePushEncoder(CompressorKind kind, tensor::DeviceKind device,
                               DevicePushStreamFactory make);

// Whether pushes compressed with `kind` can be encoded on devices of `device` (never on the CPU).
bool HasDevicePushEncoder(CompressorKind kind, tensor::DeviceKind device);

// The stream of options.kind for a tensor of `elements` on `device`; FailedPrecondition when
// that device kind has no encoder for it.
std::unique_ptr<DevicePushStream> MakeDevicePushStream(const tensor::Device& device,
                                                       int64_t elements,
                                                       const CompressorOptions& options);

}  // namespace autodist::compress
