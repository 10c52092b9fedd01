#include "runtime/compress/topk_compressor.h"

#include <algorithm>

#include "runtime/common/error.h"
#include "runtime/tensor/top_k.h"

namespace autodist::compress {
namespace {

constexpr const char* kName = "TopKCompressorEF";

}  // namespace

TopKCompressorEF::TopKCompressorEF(const CompressorOptions& options)
    : options_(options), residuals_(kName, "residual") {
  AD_CHECK(options.fraction > 0.0 && options.fraction <= 1.0, kInvalidArgument,
           "{}: fraction must be in (0, 1], got {}", kName, options.fraction);
}

int64_t TopKCompressorEF::PickCount(int64_t elements) const {
  return tensor::TopKCount(options_.fraction, elements);
}

void TopKCompressorEF::Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
                              comm::Communicator& communicator, int64_t /*step*/) {
  ValidateGroup(kName, group, gradients);
  const int64_t elements = TotalElements(gradients);
  if (elements == 0) return;
  const int64_t k = PickCount(elements);
  AddResiduals(group, gradients);
  PickLargest(k);
  KeepUnsent(group, gradients);

  const auto world = static_cast<size_t>(communicator.size());
  all_indices_.resize(world * static_cast<size_t>(k));
  all_values_.resize(world * static_cast<size_t>(k));
  communicator.AllGather(indices_.data(), indices_.size(), comm::ElementType::kInt64,
                         all_indices_.data(), group + "/indices");
  communicator.AllGather(values_.data(), values_.size(), comm::ElementType::kFloat32,
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

void TopKCompressorEF::AddResiduals(const std::string& group,
                                    const std::vector<NamedGradient>& gradients) {
  Fuse(gradients, fused_);
  size_t offset = 0;
  for (const NamedGradient& named : gradients) {
    const auto count = static_cast<size_t>(named.gradient->numel());
    const std::vector<float>& residual = residuals_.Get(group, named.name, count);
    for (size_t i = 0; i < count; ++i) fused_[offset + i] += residual[i];
    offset += count;
  }
}

void TopKCompressorEF::PickLargest(int64_t k) {
  tensor::SelectLargest(fused_.data(), static_cast<int64_t>(fused_.size()), k, indices_);
  values_.resize(indices_.size());
  for (size_t i = 0; i < indices_.size(); ++i)
    values_[i] = fused_[static_cast<size_t>(indices_[i])];
}

void TopKCompressorEF::KeepUnsent(const std::string& group,
                                  const std::vector<NamedGradient>& gradients) {
  for (const int64_t index : indices_) fused_[static_cast<size_t>(index)] = 0.0F;
  size_t offset = 0;
  for (const NamedGradient& named : gradients) {
    const auto count = static_cast<size_t>(named.gradient->numel());
    std::vector<float>& residual = residuals_.Get(group, named.name, count);
    std::copy(fused_.begin() + static_cast<std::ptrdiff_t>(offset),
              fused_.begin() + static_cast<std::ptrdiff_t>(offset + count), residual.begin());
    offset += count;
  }
}

}  // namespace autodist::compress
