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
  if (!compressor.error_feedback) {
    PushState stateless;
    compressor.encode_push(dense.data<float>(), static_cast<size_t>(elements), options, stateless,
                           out);
    return;
  }
  Stream& stream = StreamFor(what, first_replica, name, elements);
  const std::lock_guard lock(stream.mutex);
  compressor.encode_push(dense.data<float>(), static_cast<size_t>(elements), options, stream.state,
                         out);
}

PushEncoder::Stream& PushEncoder::StreamFor(const std::string& what, int first_replica,
                                            const std::string& name, int64_t elements) {
  const std::lock_guard lock(mutex_);
  std::unique_ptr<Stream>& stream = streams_[{first_replica, name}];
  if (stream == nullptr) {
    stream = std::make_unique<Stream>();
    stream->state.residual.assign(static_cast<size_t>(elements), 0.0F);
  }
  // Read under the map's lock: a residual's size never changes once made.
  AD_CHECK(static_cast<int64_t>(stream->state.residual.size()) == elements, kFailedPrecondition,
           "{}: gradient '{}' of replica {} has {} elements; its error-feedback residual has {}",
           what, name, first_replica, elements, stream->state.residual.size());
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
  return stream->state.residual;
}

}  // namespace autodist::compress
