#include "gpu/compress/push_streams.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>

#include "gpu/compress/device_tensor_state.h"
#include "gpu/compress/half_compression.h"
#include "gpu/device/cuda_error.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"
#include "runtime/compress/top_k.h"
#include "runtime/compress/topk_compressor.h"

namespace autodist::gpu {
namespace {

// Checks that `dense` is the float32 tensor of `elements` on `device` that a stream was made
// for, selects its GPU for this thread (pushes run on the client's threads), and returns its
// values.
const float* StreamInput(const char* compressor, const tensor::Device& device, int64_t elements,
                         const tensor::Tensor& dense) {
  AD_CHECK(dense.device() == device && dense.dtype() == tensor::DType::kFloat32 &&
               dense.numel() == elements,
           kInternal, "{}: a push stream of {} float32 elements on {} got {} {} elements on {}",
           compressor, elements, tensor::DeviceName(device), dense.numel(),
           tensor::DTypeName(dense.dtype()), tensor::DeviceName(dense.device()));
  UseGpu(device.index);
  return static_cast<const float*>(dense.raw());
}

// Queues the copy of `count` elements of `from` (on the GPU) into `to` (host) on `stream`.
template <typename T>
void CopyToHost(std::vector<T>& to, const void* from, int64_t count, cudaStream_t stream,
                const char* compressor, const char* what) {
  to.resize(static_cast<size_t>(count));
  if (count == 0) return;
  CheckCuda(cudaMemcpyAsync(to.data(), from, static_cast<size_t>(count) * sizeof(T),
                            cudaMemcpyDeviceToHost, stream),
            [&] { return fmt::format("{}: copying a push's {} to the host", compressor, what); });
}

// A host copy of a residual of `elements` floats, after the work queued on the GPU's stream.
std::vector<float> ResidualOnHost(const tensor::Device& device, const DeviceBuffer& residual,
                                  int64_t elements, Event& copied, const char* compressor) {
  std::vector<float> out;
  UseGpu(device.index);
  cudaStream_t stream = TensorStream(device.index);
  CopyToHost(out, residual.data(), elements, stream, compressor, "residual");
  copied.Record(stream);
  copied.Synchronize();
  return out;
}

}  // namespace

HalfPushStream::HalfPushStream(const tensor::Device& device, int64_t elements,
                               const compress::CompressorOptions& options)
    : device_(device),
      elements_(elements),
      error_feedback_(options.kind == compress::CompressorKind::kHorovodEF) {
  AD_CHECK(options.kind == compress::CompressorKind::kHorovod || error_feedback_, kInternal,
           "HalfPushStream made for {}", compress::CompressorName(options.kind));
  UseGpu(device.index);
  copied_ = std::make_unique<Event>();
  cudaStream_t stream = TensorStream(device.index);
  if (elements == 0) return;
  if (error_feedback_) residual_ = ZeroedDeviceBuffer(device.index, FloatBytes(elements), stream);
  halves_ =
      TensorPool(device.index).Allocate(static_cast<size_t>(elements) * sizeof(uint16_t), stream);
}

void HalfPushStream::Encode(const tensor::Tensor& dense, const compress::CompressorOptions& options,
                            compress::EncodedPush& out) {
  const char* name = compress::CompressorName(options.kind);
  const float* values = StreamInput(name, device_, elements_, dense);
  out.form = compress::EncodedPush::Form::kHalves;
  out.indices.clear();
  out.values.clear();
  if (elements_ == 0) {
    out.halves.clear();
    return;
  }
  cudaStream_t stream = TensorStream(device_.index);
  FloatsToHalvesOnDevice(values, error_feedback_ ? residual_.as<float>() : nullptr,
                         halves_.as<uint16_t>(), static_cast<size_t>(elements_), stream);
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("{}: compressing a push to float16", name); });
  CopyToHost(out.halves, halves_.data(), elements_, stream, name, "halves");
  copied_->Record(stream);
  copied_->Synchronize();
}

std::vector<float> HalfPushStream::Residual() {
  if (!error_feedback_) return {};
  return ResidualOnHost(device_, residual_, elements_, *copied_, "HorovodCompressorEF");
}

TopKPushStream::TopKPushStream(const tensor::Device& device, int64_t elements,
                               const compress::CompressorOptions& options)
    : device_(device), elements_(elements) {
  AD_CHECK(options.kind == compress::CompressorKind::kTopKEF, kInternal,
           "TopKPushStream made for {}", compress::CompressorName(options.kind));
  compress::CheckTopKOptions(options);
  UseGpu(device.index);
  copied_ = std::make_unique<Event>();
  if (elements == 0) return;
  residual_ = ZeroedDeviceBuffer(device.index, FloatBytes(elements), TensorStream(device.index));
  selector_ = std::make_unique<TopKSelector>(TensorPool(device.index));
}

void TopKPushStream::Encode(const tensor::Tensor& dense, const compress::CompressorOptions& options,
                            compress::EncodedPush& out) {
  const char* name = compress::CompressorName(options.kind);
  const float* values = StreamInput(name, device_, elements_, dense);
  out.form = compress::EncodedPush::Form::kTopK;
  out.halves.clear();
  const int64_t k = compress::TopKCount(options.fraction, elements_);
  if (k == 0) {
    out.indices.clear();
    out.values.clear();
    return;
  }
  cudaStream_t stream = TensorStream(device_.index);
  auto* indices = GrowDeviceBuffer<int64_t>(indices_, static_cast<size_t>(k) * sizeof(int64_t),
                                            device_.index, stream);
  auto* picked = GrowDeviceBuffer<float>(picked_, FloatBytes(k), device_.index, stream);
  selector_->TakeLargestWithFeedback(values, elements_, residual_.as<float>(), k, indices, picked,
                                     stream);
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("{}: selecting a push's entries", name); });
  CopyToHost(out.indices, indices, k, stream, name, "indices");
  CopyToHost(out.values, picked, k, stream, name, "values");
  copied_->Record(stream);
  copied_->Synchronize();
}

std::vector<float> TopKPushStream::Residual() {
  return ResidualOnHost(device_, residual_, elements_, *copied_, "TopKCompressorEF");
}

void RegisterPushStreams() {
  const auto halves = [](const tensor::Device& device, int64_t elements,
                         const compress::CompressorOptions& options) {
    return std::unique_ptr<compress::DevicePushStream>(
        std::make_unique<HalfPushStream>(device, elements, options));
  };
  compress::RegisterDevicePushEncoder(compress::CompressorKind::kHorovod, tensor::DeviceKind::kCuda,
                                      halves);
  compress::RegisterDevicePushEncoder(compress::CompressorKind::kHorovodEF,
                                      tensor::DeviceKind::kCuda, halves);
  compress::RegisterDevicePushEncoder(
      compress::CompressorKind::kTopKEF, tensor::DeviceKind::kCuda,
      [](const tensor::Device& device, int64_t elements,
         const compress::CompressorOptions& options) {
        return std::unique_ptr<compress::DevicePushStream>(
            std::make_unique<TopKPushStream>(device, elements, options));
      });
}

}  // namespace autodist::gpu
