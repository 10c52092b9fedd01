// Parameter-server pushes of GPU workers compressed on their GPU
// (runtime/compress/device_push_encoder.h), before the copy to the host: the Horovod pair casts
// in one pass (half_compression.h) and TopK selects with the TopKSelector (top_k_selection.h),
// both the CPU encoder's formulas bit for bit, so the copy carries only the halves, or the k
// (index, value) pairs. The residual of error feedback stays on the GPU; the work is queued on
// the GPU's tensor stream, after the kernels that produced the gradient.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/compress/top_k_selection.h"
#include "gpu/device/stream.h"
#include "gpu/memory/device_pool.h"
#include "runtime/compress/device_push_encoder.h"

namespace autodist::gpu {

// The Horovod pair: every element as a float16, with error feedback for kHorovodEF.
class HalfPushStream final : public compress::DevicePushStream {
 public:
  HalfPushStream(const tensor::Device& device, int64_t elements,
                 const compress::CompressorOptions& options);

  void Encode(const tensor::Tensor& dense, const compress::CompressorOptions& options,
              compress::EncodedPush& out) override;
  std::vector<float> Residual() override;

 private:
  tensor::Device device_;
  int64_t elements_;
  bool error_feedback_;
  DeviceBuffer residual_;  // empty without error feedback
  DeviceBuffer halves_;
  std::unique_ptr<Event> copied_;  // made on the stream's GPU: an event belongs to one device
};

// TopKCompressorEF: the k = TopKCount(fraction, elements) entries of residual + gradient largest
// in magnitude, their positions ascending; the rest stays in the residual.
class TopKPushStream final : public compress::DevicePushStream {
 public:
  TopKPushStream(const tensor::Device& device, int64_t elements,
                 const compress::CompressorOptions& options);

  void Encode(const tensor::Tensor& dense, const compress::CompressorOptions& options,
              compress::EncodedPush& out) override;
  std::vector<float> Residual() override;

 private:
  tensor::Device device_;
  int64_t elements_;
  DeviceBuffer residual_;
  DeviceBuffer indices_;
  DeviceBuffer picked_;
  std::unique_ptr<TopKSelector> selector_;
  std::unique_ptr<Event> copied_;  // made on the stream's GPU
};

// Registers both for CUDA devices (the backend's installer calls it once).
void RegisterPushStreams();

}  // namespace autodist::gpu
