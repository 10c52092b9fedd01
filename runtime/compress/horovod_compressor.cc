#include "runtime/compress/horovod_compressor.h"

#include "runtime/common/error.h"
#include "runtime/compress/error_feedback.h"
#include "runtime/compress/registry.h"
#include "runtime/tensor/float16.h"

namespace autodist::compress {
namespace {

std::unique_ptr<Compressor> Make(const CompressorOptions& options) {
  return std::make_unique<HorovodCompressor>(options);
}

void EncodeHalves(const float* values, size_t count, const CompressorOptions& /*options*/,
                  PushState& /*state*/, EncodedPush& out) {
  out.form = EncodedPush::Form::kHalves;
  out.halves.resize(count);
  tensor::FloatsToHalves(values, count, out.halves.data());
}

void EncodeHalvesWithFeedback(const float* values, size_t count,
                              const CompressorOptions& /*options*/, PushState& state,
                              EncodedPush& out) {
  out.form = EncodedPush::Form::kHalves;
  out.halves.resize(count);
  FloatsToHalvesWithFeedback(values, count, state.residual.data(), out.halves.data());
}

const CompressorRegistrar kHorovod({.kind = CompressorKind::kHorovod,
                                    .name = "HorovodCompressor",
                                    .make = Make,
                                    .encode_push = EncodeHalves,
                                    .pushes = true,
                                    .error_feedback = false});
const CompressorRegistrar kHorovodEF({.kind = CompressorKind::kHorovodEF,
                                      .name = "HorovodCompressorEF",
                                      .make = Make,
                                      .encode_push = EncodeHalvesWithFeedback,
                                      .pushes = true,
                                      .error_feedback = true});

}  // namespace

HorovodCompressor::HorovodCompressor(const CompressorOptions& options)
    : options_(options), residuals_(CompressorName(options.kind), "residual") {
  AD_CHECK(options.kind == CompressorKind::kHorovod || options.kind == CompressorKind::kHorovodEF,
           kInternal, "HorovodCompressor made for {}", CompressorName(options.kind));
}

void HorovodCompressor::Reduce(const std::string& group,
                               const std::vector<NamedGradient>& gradients,
                               collective::Communicator& communicator, int64_t /*step*/) {
  ValidateGroup(CompressorName(options_.kind), group, gradients);
  if (gradients.empty()) return;
  Fuse(gradients, fused_);
  halves_.resize(fused_.size());
  if (options_.kind == CompressorKind::kHorovodEF) {
    ApplyErrorFeedback(group, gradients);
  } else {
    tensor::FloatsToHalves(fused_.data(), fused_.size(), halves_.data());
  }
  communicator.AllReduceSum(halves_.data(), halves_.size(), collective::ElementType::kFloat16,
                            options_.algorithm, group);
  tensor::HalvesToFloats(halves_.data(), halves_.size(), fused_.data());
  Unfuse(fused_, gradients);
  stats_.raw_bytes += static_cast<int64_t>(fused_.size() * sizeof(float));
  stats_.wire_bytes += static_cast<int64_t>(halves_.size() * sizeof(uint16_t));
}

void HorovodCompressor::ApplyErrorFeedback(const std::string& group,
                                           const std::vector<NamedGradient>& gradients) {
  size_t offset = 0;
  for (const NamedGradient& named : gradients) {
    const auto count = static_cast<size_t>(named.gradient->numel());
    std::vector<float>& residual = residuals_.Get(group, named.name, count);
    // Overflow keeps no residual (see the header); the shared routine does that.
    FloatsToHalvesWithFeedback(fused_.data() + offset, count, residual.data(),
                               halves_.data() + offset);
    offset += count;
  }
}

}  // namespace autodist::compress
