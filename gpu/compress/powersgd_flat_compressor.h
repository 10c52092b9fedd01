// PowerSGD inside the all-reduce on the GPUs (runtime/compress/flat_compressor.h), registered for
// CUDA by the backend: the CPU compressor's algorithm and split (powersgd_compressor.h) on a
// group's buffer, with its steps on the device (powersgd_device.h) and both all-reduces (P, then
// Q, each fused over the group's matrices) on device buffers through the communicator (NCCL).
// The members PowerSGD leaves uncompressed are packed and all-reduced in one float32 call, as
// the CPU compressor fuses them. Residuals and the warm-started Q are kept per member on the
// GPU. The results agree with the CPU's to float rounding: the products' sums are ordered
// differently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/compress/device_tensor_state.h"
#include "gpu/device/stream.h"
#include "gpu/memory/device_pool.h"
#include "runtime/compress/flat_compressor.h"

namespace autodist::gpu {

class PowerSGDFlatCompressor final : public compress::FlatCompressor {
 public:
  // options.kind: kPowerSGD. Throws InvalidArgument for options the CPU compressor refuses.
  explicit PowerSGDFlatCompressor(const compress::CompressorOptions& options);

  // `buffer` on a CUDA device; the work is queued on that GPU's tensor stream, around the
  // communicator's calls.
  void Reduce(const std::string& group, tensor::Tensor& buffer,
              const std::vector<compress::FlatMember>& members,
              collective::Communicator& communicator, int64_t step) override;
  compress::CompressionStats stats() const override { return stats_; }

  // Registers kPowerSGD for CUDA devices (the backend's installer calls it once).
  static void Register();

 private:
  // A compressed member viewed as an n x m matrix, and its places in the P and Q buffers.
  struct LowRank {
    const compress::FlatMember* member;
    int64_t n;
    int64_t m;
    int64_t p_offset;           // into p_ (n r elements)
    int64_t q_offset;           // into q_ (m r elements)
    float* residual = nullptr;  // its state, found once per step
    float* kept_q = nullptr;
  };

  // Sums `members` over the ranks, uncompressed, through one packed float32 buffer.
  void ReduceDense(const std::string& tag, float* values,
                   const std::vector<const compress::FlatMember*>& members,
                   collective::Communicator& communicator, int index, cudaStream_t stream);

  compress::CompressorOptions options_;
  DeviceTensorState residuals_;
  DeviceTensorState qs_;
  // Whether a member's kept Q (last step's Qs) has a zero or non-finite column: then it is drawn
  // afresh, as the CPU compressor does. Read back once per step with the Qs.
  std::map<std::string, bool> degenerate_q_;
  DeviceBuffer dense_;                // the uncompressed members, packed
  DeviceBuffer p_;                    // the group's P matrices, back to back
  DeviceBuffer q_;                    // and its Qs
  std::vector<float> host_q_;         // the step's Qs, read back for the degenerate check
  std::unique_ptr<Event> read_back_;  // after the read-back, waited for on the host
  compress::CompressionStats stats_;
};

}  // namespace autodist::gpu
