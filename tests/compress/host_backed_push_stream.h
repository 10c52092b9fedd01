// A stand-in for a GPU's push encoder (runtime/compress/device_push_encoder.h) for CPU tests: on
// tensors of a "GPU" whose memory is host memory (tests/tensor/host_backed_memory.h) it
// compresses with the host's own push form of its kind, so that tests of the device path's
// routing and state compare with the host path bit for bit. It counts what it is asked.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <vector>

#include "runtime/compress/device_push_encoder.h"
#include "runtime/compress/registry.h"

namespace autodist::compress::testing {

class HostBackedPushStream final : public DevicePushStream {
 public:
  HostBackedPushStream(const tensor::Device& device, int64_t elements,
                       const CompressorOptions& options)
      : device_(device), feedback_(FindCompressor(options.kind).error_feedback) {
    state_.residual.assign(static_cast<size_t>(elements), 0.0F);
    ++made;
  }

  void Encode(const tensor::Tensor& dense, const CompressorOptions& options,
              EncodedPush& out) override {
    EXPECT_EQ(dense.device(), device_);
    ++encoded;
    FindCompressor(options.kind)
        .encode_push(static_cast<const float*>(dense.raw()), static_cast<size_t>(dense.numel()),
                     options, state_, out);
  }
  std::vector<float> Residual() override {
    return feedback_ ? state_.residual : std::vector<float>{};
  }

  static inline int made = 0;
  static inline int encoded = 0;

 private:
  tensor::Device device_;
  bool feedback_;
  PushState state_;
};

// Registers the stand-in as CUDA's push encoder of each of `kinds` (once per test program: a
// second registration is an error).
inline void RegisterHostBackedPushEncoders(std::initializer_list<CompressorKind> kinds) {
  for (const CompressorKind kind : kinds) {
    RegisterDevicePushEncoder(
        kind, tensor::DeviceKind::kCuda,
        [](const tensor::Device& device, int64_t elements, const CompressorOptions& options) {
          return std::unique_ptr<DevicePushStream>(
              std::make_unique<HostBackedPushStream>(device, elements, options));
        });
  }
}

}  // namespace autodist::compress::testing
