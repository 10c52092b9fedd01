#include "gpu/compress/half_flat_compressor.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdint>

#include "gpu/compress/device_tensor_state.h"
#include "gpu/compress/half_compression.h"
#include "gpu/device/cuda_error.h"
#include "gpu/device/stream.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"

namespace autodist::gpu {

HalfFlatCompressor::HalfFlatCompressor(const compress::CompressorOptions& options)
    : options_(options), residuals_(compress::CompressorName(options.kind), "residual") {
  AD_CHECK(options.kind == compress::CompressorKind::kHorovod ||
               options.kind == compress::CompressorKind::kHorovodEF,
           kInternal, "HalfFlatCompressor made for {}", compress::CompressorName(options.kind));
}

void HalfFlatCompressor::Reduce(const std::string& group, tensor::Tensor& buffer,
                                const std::vector<compress::FlatMember>& members,
                                collective::Communicator& communicator, int64_t /*step*/) {
  const int index = FlatBufferGpu(compress::CompressorName(options_.kind), group, buffer);
  if (members.empty()) return;
  UseGpu(index);  // a communication thread's current GPU may be another
  cudaStream_t stream = TensorStream(index);
  const int64_t count = buffer.numel();
  if (halves_elements_ < count) {
    // Zeroed once: places of no member are summed as they are, and never read.
    halves_ = ZeroedDeviceBuffer(index, static_cast<size_t>(count) * sizeof(uint16_t), stream);
    halves_elements_ = count;
  }
  auto* values = static_cast<float*>(buffer.raw());
  auto* halves = halves_.as<uint16_t>();
  int64_t elements = 0;
  for (const compress::FlatMember& member : members) {
    const int64_t n = tensor::NumElements(member.shape);
    AD_CHECK(member.offset >= 0 && member.offset + n <= count, kInternal,
             "{}: group '{}': '{}' lies outside the buffer",
             compress::CompressorName(options_.kind), group, member.name);
    float* residual = options_.kind == compress::CompressorKind::kHorovodEF
                          ? residuals_.Get(group, member.name, n, index, stream)
                          : nullptr;
    FloatsToHalvesOnDevice(values + member.offset, residual, halves + member.offset,
                           static_cast<size_t>(n), stream);
    elements += n;
  }
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("compressing group '{}' to float16", group); });
  communicator.AllReduceSum(halves, static_cast<size_t>(count), collective::ElementType::kFloat16,
                            options_.algorithm, group);
  for (const compress::FlatMember& member : members) {
    HalvesToFloatsOnDevice(halves + member.offset, values + member.offset,
                           static_cast<size_t>(tensor::NumElements(member.shape)), stream);
  }
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("restoring group '{}' from float16", group); });
  stats_.raw_bytes += elements * static_cast<int64_t>(sizeof(float));
  stats_.wire_bytes += elements * static_cast<int64_t>(sizeof(uint16_t));
}

void HalfFlatCompressor::Register() {
  const auto make = [](const compress::CompressorOptions& options) {
    return std::unique_ptr<compress::FlatCompressor>(std::make_unique<HalfFlatCompressor>(options));
  };
  compress::RegisterFlatCompressor(compress::CompressorKind::kHorovod, tensor::DeviceKind::kCuda,
                                   make);
  compress::RegisterFlatCompressor(compress::CompressorKind::kHorovodEF, tensor::DeviceKind::kCuda,
                                   make);
}

}  // namespace autodist::gpu
