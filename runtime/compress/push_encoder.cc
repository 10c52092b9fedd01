#include "runtime/compress/push_encoder.h"

#include "runtime/common/error.h"
#include "runtime/compress/registry.h"

namespace autodist::compress {

void CheckPushCompression(const std::string& what, const std::string& name,
                          const CompressorOptions& options) {
  const CompressorRegistration& compressor = FindCompressor(options.kind);
  AD_CHECK(compressor.pushes, kInvalidArgument,
           "{}: gradient '{}' is to be pushed with {}, which needs an all-reduce", what, name,
           compressor.name);
  AD_CHECK(options.kind != CompressorKind::kTopKEF ||
               (options.fraction > 0.0 && options.fraction <= 1.0),
           kInvalidArgument, "{}: gradient '{}': {} fraction must be in (0, 1], got {}", what, name,
           compressor.name, options.fraction);
}

void PushEncoder::Encode(const std::string& what, int first_replica, const std::string& name,
                         const tensor::Tensor& dense, const CompressorOptions& options,
                         EncodedPush& out) {
  CheckPushCompression(what, name, options);
  const CompressorRegistration& compressor = FindCompressor(options.kind);
  AD_CHECK(compressor.encode_push != nullptr, kInternal,
           "{}: gradient '{}': {} pushes are sent uncompressed, not encoded", what, name,
           compressor.name);
  AD_CHECK(dense.dtype() == tensor::DType::kFloat32, kInvalidArgument,
           "{}: gradient '{}' is {}; {} compresses float32 gradients only", what, name,
           tensor::DTypeName(dense.dtype()), compressor.name);
  const int64_t elements = dense.numel();
  if (!dense.device().is_cpu()) {
    // Every device push has a stream, with or without feedback: it keeps the device's scratch.
    Stream& stream = StreamFor(what, first_replica, name, elements, dense.device(), options);
    const std::lock_guard lock(stream.mutex);
    stream.on_device->Encode(dense, options, out);
    return;
  }
  if (!compressor.error_feedback) {
    PushState stateless;
    compressor.encode_push(dense.data<float>(), static_cast<size_t>(elements), options, stateless,
                           out);
    return;
  }
  Stream& stream = StreamFor(what, first_replica, name, elements, dense.device(), options);
  const std::lock_guard lock(stream.mutex);
  compressor.encode_push(dense.data<float>(), static_cast<size_t>(elements), options, stream.state,
                         out);
}

PushEncoder::Stream& PushEncoder::StreamFor(const std::string& what, int first_replica,
                                            const std::string& name, int64_t elements,
                                            const tensor::Device& device,
                                            const CompressorOptions& options) {
  const std::lock_guard lock(mutex_);
  auto found = streams_.find({first_replica, name});
  if (found == streams_.end()) {
    // Made before it is added: a stream whose device refuses the kind is never left half made.
    auto made = std::make_unique<Stream>();
    made->device = device;
    made->elements = elements;
    made->error_feedback = FindCompressor(options.kind).error_feedback;
    if (device.is_cpu()) {
      made->state.residual.assign(static_cast<size_t>(elements), 0.0F);
    } else {
      made->on_device = MakeDevicePushStream(device, elements, options);
    }
    found = streams_.emplace(std::pair{first_replica, name}, std::move(made)).first;
  }
  const std::unique_ptr<Stream>& stream = found->second;
  // Read under the map's lock: a stream's size and device never change once made.
  AD_CHECK(stream->elements == elements, kFailedPrecondition,
           "{}: gradient '{}' of replica {} has {} elements; its error-feedback residual has {}",
           what, name, first_replica, elements, stream->elements);
  AD_CHECK(
      stream->device == device, kFailedPrecondition,
      "{}: gradient '{}' of replica {} is on {}; its stream of pushes keeps its residual on {}",
      what, name, first_replica, tensor::DeviceName(device), tensor::DeviceName(stream->device));
  return *stream;
}

std::optional<std::vector<float>> PushEncoder::Residual(int first_replica,
                                                        const std::string& name) const {
  Stream* stream = nullptr;
  {
    const std::lock_guard lock(mutex_);
    const auto it = streams_.find({first_replica, name});
    if (it == streams_.end()) return std::nullopt;
    stream = it->second.get();
  }
  const std::lock_guard lock(stream->mutex);
  if (!stream->error_feedback) return std::nullopt;
  if (stream->on_device != nullptr) return stream->on_device->Residual();
  return stream->state.residual;
}

}  // namespace autodist::compress
