#include "runtime/compress/group.h"

#include <algorithm>
#include <set>

#include "runtime/common/error.h"

namespace autodist::compress {

void ValidateGroup(const char* compressor, const std::string& group,
                   const std::vector<NamedGradient>& gradients) {
  std::set<std::string> names;
  for (size_t i = 0; i < gradients.size(); ++i) {
    const NamedGradient& named = gradients[i];
    AD_CHECK(!named.name.empty(), kInvalidArgument,
             "{}: group '{}': gradient #{} has an empty name", compressor, group, i);
    AD_CHECK(
        names.insert(named.name).second, kInvalidArgument,
        "{}: group '{}': gradient '{}' appears more than once; names must be unique in a group",
        compressor, group, named.name);
    AD_CHECK(named.gradient != nullptr && named.gradient->defined(), kInvalidArgument,
             "{}: group '{}': gradient '{}' is undefined; expected a float32 tensor", compressor,
             group, named.name);
    AD_CHECK(named.gradient->dtype() == tensor::DType::kFloat32, kInvalidArgument,
             "{}: group '{}': gradient '{}' is {}; expected float32", compressor, group, named.name,
             tensor::DTypeName(named.gradient->dtype()));
  }
}

int64_t TotalElements(const std::vector<NamedGradient>& gradients) {
  int64_t total = 0;
  for (const NamedGradient& named : gradients) total += named.gradient->numel();
  return total;
}

void Fuse(const std::vector<NamedGradient>& gradients, std::vector<float>& buffer) {
  buffer.resize(static_cast<size_t>(TotalElements(gradients)));
  float* out = buffer.data();
  for (const NamedGradient& named : gradients) {
    const float* data = named.gradient->data<float>();
    out = std::copy(data, data + named.gradient->numel(), out);
  }
}

void Unfuse(const std::vector<float>& buffer, const std::vector<NamedGradient>& gradients) {
  const float* in = buffer.data();
  for (const NamedGradient& named : gradients) {
    const int64_t count = named.gradient->numel();
    std::copy(in, in + count, named.gradient->data<float>());
    in += count;
  }
}

int64_t FusedAllReduce(const std::vector<NamedGradient>& gradients,
                       collective::Communicator& communicator,
                       collective::AllReduceAlgorithm algorithm, const std::string& tag,
                       std::vector<float>& buffer) {
  const int64_t count = TotalElements(gradients);
  if (gradients.empty()) return 0;
  if (gradients.size() == 1) {
    // Nothing to fuse: spare the two copies.
    communicator.AllReduceSum(gradients[0].gradient->data<float>(), static_cast<size_t>(count),
                              collective::ElementType::kFloat32, algorithm, tag);
  } else {
    Fuse(gradients, buffer);
    communicator.AllReduceSum(buffer.data(), buffer.size(), collective::ElementType::kFloat32,
                              algorithm, tag);
    Unfuse(buffer, gradients);
  }
  return count * static_cast<int64_t>(sizeof(float));
}

std::vector<float>& TensorState::Get(const std::string& group, const std::string& name,
                                     size_t size) {
  auto [it, inserted] = values_.try_emplace(name);
  if (inserted) {
    it->second.assign(size, 0.0F);
  } else {
    CheckStateSize(compressor_, what_, group, name, size, it->second.size());
  }
  return it->second;
}

void CheckStateSize(const char* compressor, const char* what, const std::string& group,
                    const std::string& name, size_t size, size_t had) {
  AD_CHECK(had == size, kFailedPrecondition,
           "{}: group '{}': gradient '{}' needs a {} of {} elements but has one of {} from an "
           "earlier step; a name must denote the same tensor every step",
           compressor, group, name, what, size, had);
}

const std::vector<float>* TensorState::Find(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

}  // namespace autodist::compress
