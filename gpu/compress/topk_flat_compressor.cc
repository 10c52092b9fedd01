#include "gpu/compress/topk_flat_compressor.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "gpu/compress/sparse_sum.h"
#include "gpu/device/cuda_error.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"
#include "runtime/compress/top_k.h"
#include "runtime/compress/topk_compressor.h"

namespace autodist::gpu {
namespace {

constexpr const char* kName = "TopKCompressorEF";

}  // namespace

TopKFlatCompressor::TopKFlatCompressor(const compress::CompressorOptions& options)
    : options_(options), residuals_(kName, "residual") {
  AD_CHECK(options.kind == compress::CompressorKind::kTopKEF, kInternal,
           "TopKFlatCompressor made for {}", compress::CompressorName(options.kind));
  compress::CheckTopKOptions(options);
}

void TopKFlatCompressor::Reduce(const std::string& group, tensor::Tensor& buffer,
                                const std::vector<compress::FlatMember>& members,
                                collective::Communicator& communicator, int64_t /*step*/) {
  const int index = FlatBufferGpu(kName, group, buffer);
  if (gpu_ < 0) gpu_ = index;
  AD_CHECK(gpu_ == index, kInternal, "{}: group '{}' moved from GPU {} to GPU {}", kName, group,
           gpu_, index);
  UseGpu(index);  // a communication thread's current GPU may be another
  cudaStream_t stream = TensorStream(index);
  if (!selector_) {
    selector_ = std::make_unique<TopKSelector>(TensorPool(index));
    summed_ = std::make_unique<Event>();
  }
  int64_t elements = 0;
  for (const compress::FlatMember& member : members) {
    const int64_t n = tensor::NumElements(member.shape);
    AD_CHECK(member.offset >= 0 && member.offset + n <= buffer.numel(), kInternal,
             "{}: group '{}': '{}' lies outside the buffer", kName, group, member.name);
    elements += n;
  }
  if (elements == 0) return;
  const int64_t k = compress::TopKCount(options_.fraction, elements);
  auto* values = static_cast<float*>(buffer.raw());

  // Pack the members and their residuals, as the CPU fuses them.
  auto* fused = GrowDeviceBuffer<float>(fused_, FloatBytes(elements), index, stream);
  auto* fused_residual =
      GrowDeviceBuffer<float>(fused_residual_, FloatBytes(elements), index, stream);
  // `what` and the member's `name` describe the copy in its error.
  const auto copy = [&](float* to, const float* from, int64_t n, const char* what,
                        const std::string& name) {
    CheckCuda(cudaMemcpyAsync(to, from, FloatBytes(n), cudaMemcpyDeviceToDevice, stream),
              [&] { return fmt::format("{}: group '{}': {} '{}'", kName, group, what, name); });
  };
  std::vector<float*> residuals;  // each member's, found once per step
  residuals.reserve(members.size());
  int64_t at = 0;
  for (const compress::FlatMember& member : members) {
    const int64_t n = tensor::NumElements(member.shape);
    residuals.push_back(residuals_.Get(group, member.name, n, index, stream));
    copy(fused + at, values + member.offset, n, "packing", member.name);
    copy(fused_residual + at, residuals.back(), n, "packing the residual of", member.name);
    at += n;
  }
  auto* indices =
      GrowDeviceBuffer<int64_t>(indices_, static_cast<size_t>(k) * sizeof(int64_t), index, stream);
  auto* picked = GrowDeviceBuffer<float>(values_, FloatBytes(k), index, stream);
  selector_->TakeLargestWithFeedback(fused, elements, fused_residual, k, indices, picked, stream);
  at = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const int64_t n = tensor::NumElements(members[i].shape);
    copy(residuals[i], fused_residual + at, n, "keeping the residual of", members[i].name);
    at += n;
  }
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("{}: selecting group '{}'", kName, group); });

  const int world = communicator.size();
  const auto gathered = static_cast<size_t>(world) * static_cast<size_t>(k);
  auto* all_indices =
      GrowDeviceBuffer<int64_t>(all_indices_, gathered * sizeof(int64_t), index, stream);
  auto* all_values = GrowDeviceBuffer<float>(all_values_, gathered * sizeof(float), index, stream);
  communicator.AllGather(indices, static_cast<size_t>(k), collective::ElementType::kInt64,
                         all_indices, group + "/indices");
  communicator.AllGather(picked, static_cast<size_t>(k), collective::ElementType::kFloat32,
                         all_values, group + "/values");

  auto* outside_count = GrowDeviceBuffer<int>(outside_, sizeof(int), index, stream);
  CheckCuda(
      SumSparseOnDevice(fused, elements, all_indices, all_values, k, world, outside_count, stream),
      [&] { return fmt::format("{}: summing group '{}'", kName, group); });
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("{}: summing group '{}'", kName, group); });
  at = 0;
  for (const compress::FlatMember& member : members) {
    const int64_t n = tensor::NumElements(member.shape);
    copy(values + member.offset, fused + at, n, "unpacking", member.name);
    at += n;
  }
  // A rank that sent an index outside the group is a bug, never a silent drop: check it, waiting
  // only for this group's work (an event), not for what backward queued after it.
  int outside = 0;
  CheckCuda(cudaMemcpyAsync(&outside, outside_count, sizeof(int), cudaMemcpyDeviceToHost, stream),
            [&] { return fmt::format("{}: checking group '{}'", kName, group); });
  summed_->Record(stream);
  summed_->Synchronize();
  AD_CHECK(outside == 0, kInternal, "{}: group '{}': ranks sent {} indices outside its {} elements",
           kName, group, outside, elements);
  stats_.raw_bytes += elements * static_cast<int64_t>(sizeof(float));
  stats_.wire_bytes += k * static_cast<int64_t>(sizeof(int64_t) + sizeof(float));
}

void TopKFlatCompressor::Register() {
  compress::RegisterFlatCompressor(compress::CompressorKind::kTopKEF, tensor::DeviceKind::kCuda,
                                   [](const compress::CompressorOptions& options) {
                                     return std::unique_ptr<compress::FlatCompressor>(
                                         std::make_unique<TopKFlatCompressor>(options));
                                   });
}

}  // namespace autodist::gpu
