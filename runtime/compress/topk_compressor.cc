#include "runtime/compress/topk_compressor.h"

#include <algorithm>

#include "runtime/common/error.h"
#include "runtime/compress/error_feedback.h"
#include "runtime/compress/registry.h"
#include "runtime/compress/top_k.h"

namespace autodist::compress {
namespace {

constexpr const char* kName = "TopKCompressorEF";

void EncodeLargestWithFeedback(const float* values, size_t count, const CompressorOptions& options,
                               PushState& state, EncodedPush& out) {
  out.form = EncodedPush::Form::kTopK;
  const int64_t k = TopKCount(options.fraction, static_cast<int64_t>(count));
  TakeLargestWithFeedback(values, count, state.residual.data(), k, state.scratch, out.values);
  out.indices = state.scratch;
}

const CompressorRegistrar kRegistrar(
    {.kind = CompressorKind::kTopKEF,
     .name = kName,
     .make = [](const CompressorOptions& options) -> std::unique_ptr<Compressor> {
       return std::make_unique<TopKCompressorEF>(options);
     },
     .encode_push = EncodeLargestWithFeedback,
     .pushes = true,
     .error_feedback = true});

}  // namespace

void CheckTopKOptions(const CompressorOptions& options) {
  AD_CHECK(options.fraction > 0.0 && options.fraction <= 1.0, kInvalidArgument,
           "{}: fraction must be in (0, 1], got {}", kName, options.fraction);
}

TopKCompressorEF::TopKCompressorEF(const CompressorOptions& options)
    : options_(options), residuals_(kName, "residual") {
  CheckTopKOptions(options);
}

int64_t TopKCompressorEF::PickCount(int64_t elements) const {
  return TopKCount(options_.fraction, elements);
}

void TopKCompressorEF::Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
                              collective::Communicator& communicator, int64_t /*step*/) {
  ValidateGroup(kName, group, gradients);
  const int64_t elements = TotalElements(gradients);
  if (elements == 0) return;
  const int64_t k = PickCount(elements);
  Fuse(gradients, fused_);
  GatherResiduals(group, gradients);
  TakeLargestWithFeedback(fused_.data(), fused_.size(), fused_residual_.data(), k, indices_,
                          values_);
  ScatterResiduals(group, gradients);

  const auto world = static_cast<size_t>(communicator.size());
  all_indices_.resize(world * static_cast<size_t>(k));
  all_values_.resize(world * static_cast<size_t>(k));
  communicator.AllGather(indices_.data(), indices_.size(), collective::ElementType::kInt64,
                         all_indices_.data(), group + "/indices");
  communicator.AllGather(values_.data(), values_.size(), collective::ElementType::kFloat32,
                         all_values_.data(), group + "/values");

  // Rank order on every rank: the same float additions, so every rank gets the same sum.
  std::fill(fused_.begin(), fused_.end(), 0.0F);
  for (size_t i = 0; i < all_indices_.size(); ++i) {
    const int64_t index = all_indices_[i];
    AD_CHECK(index >= 0 && index < elements, kInternal,
             "{}: group '{}': a rank sent index {} for a group of {} elements", kName, group, index,
             elements);
    fused_[static_cast<size_t>(index)] += all_values_[i];
  }
  Unfuse(fused_, gradients);
  stats_.raw_bytes += elements * static_cast<int64_t>(sizeof(float));
  stats_.wire_bytes += k * static_cast<int64_t>(sizeof(int64_t) + sizeof(float));
}

void TopKCompressorEF::GatherResiduals(const std::string& group,
                                       const std::vector<NamedGradient>& gradients) {
  fused_residual_.resize(fused_.size());
  size_t offset = 0;
  for (const NamedGradient& named : gradients) {
    const auto count = static_cast<size_t>(named.gradient->numel());
    const std::vector<float>& residual = residuals_.Get(group, named.name, count);
    std::copy(residual.begin(), residual.end(),
              fused_residual_.begin() + static_cast<std::ptrdiff_t>(offset));
    offset += count;
  }
}

void TopKCompressorEF::ScatterResiduals(const std::string& group,
                                        const std::vector<NamedGradient>& gradients) {
  size_t offset = 0;
  for (const NamedGradient& named : gradients) {
    const auto count = static_cast<size_t>(named.gradient->numel());
    std::vector<float>& residual = residuals_.Get(group, named.name, count);
    std::copy(fused_residual_.begin() + static_cast<std::ptrdiff_t>(offset),
              fused_residual_.begin() + static_cast<std::ptrdiff_t>(offset + count),
              residual.begin());
    offset += count;
  }
}

}  // namespace autodist::compress
