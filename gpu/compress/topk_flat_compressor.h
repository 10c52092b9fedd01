// TopK with error feedback inside the all-reduce on the GPUs (runtime/compress/flat_compressor.h),
// registered for CUDA by the backend: the CPU compressor's algorithm (topk_compressor.h) on a
// group's buffer, every step on the device. The members are packed with their residuals, the k
// largest of g' = g + e are selected through CUB (top_k_selection.h: the CPU's positions, its
// residual step bit for bit), every rank's indices and values are all-gathered on device buffers
// through the communicator (NCCL), summed into zeros in rank order (sparse_sum.h) and unpacked
// into the buffer: the CPU's bits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu/compress/device_tensor_state.h"
#include "gpu/compress/top_k_selection.h"
#include "gpu/device/stream.h"
#include "gpu/memory/device_pool.h"
#include "runtime/compress/flat_compressor.h"

namespace autodist::gpu {

class TopKFlatCompressor final : public compress::FlatCompressor {
 public:
  // options.kind: kTopKEF. Throws InvalidArgument for options the CPU compressor refuses.
  explicit TopKFlatCompressor(const compress::CompressorOptions& options);

  // `buffer` on a CUDA device; the work is queued on that GPU's tensor stream, around the
  // communicator's calls.
  void Reduce(const std::string& group, tensor::Tensor& buffer,
              const std::vector<compress::FlatMember>& members,
              collective::Communicator& communicator, int64_t step) override;
  compress::CompressionStats stats() const override { return stats_; }

  // Registers kTopKEF for CUDA devices (the backend's installer calls it once).
  static void Register();

 private:
  compress::CompressorOptions options_;
  int gpu_ = -1;  // the GPU of the first buffer: the selector and the event live there
  std::unique_ptr<TopKSelector> selector_;
  std::unique_ptr<Event> summed_;  // after the sum's check count, waited for on the host
  DeviceTensorState residuals_;
  DeviceBuffer fused_;
  DeviceBuffer fused_residual_;
  DeviceBuffer indices_;      // this rank's k
  DeviceBuffer values_;       // this rank's k
  DeviceBuffer all_indices_;  // every rank's k, in rank order
  DeviceBuffer all_values_;
  DeviceBuffer outside_;  // pairs outside the group, counted by the sum
  compress::CompressionStats stats_;
};

}  // namespace autodist::gpu
