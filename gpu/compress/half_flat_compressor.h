// The Horovod compressors inside the all-reduce on the GPUs (runtime/compress/flat_compressor.h),
// registered for CUDA by the backend: each member of a group's buffer is cast to float16 in one
// pass (with error feedback the residual is added and the new one kept in the same pass;
// half_compression.h), the group's halves are summed in float16 by the communicator (NCCL), and
// cast back in place. The CPU compressor's formulas, element for element; residuals are kept per
// member name on the GPU, as the CPU keeps them per tensor.
#pragma once

#include <string>
#include <vector>

#include "gpu/compress/device_tensor_state.h"
#include "gpu/memory/device_pool.h"
#include "runtime/compress/flat_compressor.h"

namespace autodist::gpu {

class HalfFlatCompressor final : public compress::FlatCompressor {
 public:
  // options.kind: kHorovod, or kHorovodEF for error feedback.
  explicit HalfFlatCompressor(const compress::CompressorOptions& options);

  // `buffer` on a CUDA device; the work is queued on that GPU's tensor stream, around the
  // communicator's call.
  void Reduce(const std::string& group, tensor::Tensor& buffer,
              const std::vector<compress::FlatMember>& members,
              collective::Communicator& communicator, int64_t step) override;
  compress::CompressionStats stats() const override { return stats_; }

  // Registers both kinds for CUDA devices (the backend's installer calls it once).
  static void Register();

 private:
  compress::CompressorOptions options_;
  DeviceBuffer halves_;
  int64_t halves_elements_ = 0;
  DeviceTensorState residuals_;  // by member name; empty without error feedback
  compress::CompressionStats stats_;
};

}  // namespace autodist::gpu
