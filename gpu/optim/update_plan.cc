#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "gpu/optim/multi_tensor_update.h"
#include "runtime/common/error.h"

namespace autodist::gpu::detail {
namespace {

size_t TargetsBytes(size_t targets) {
  // The chunk table follows, aligned for its entries.
  return (targets * sizeof(UpdateTarget) + alignof(ChunkRef) - 1) / alignof(ChunkRef) *
         alignof(ChunkRef);
}

}  // namespace

bool UpdateTarget::operator==(const UpdateTarget& other) const {
  return param == other.param && grad == other.grad && numel == other.numel &&
         std::equal(std::begin(slots), std::end(slots), std::begin(other.slots));
}

UpdatePlan::UpdatePlan(std::vector<UpdateTarget> targets, DevicePool& pool, cudaStream_t stream)
    : targets_(std::move(targets)) {
  std::vector<ChunkRef> chunks;
  for (size_t t = 0; t < targets_.size(); ++t) {
    const int64_t count = (targets_[t].numel + kChunkElements - 1) / kChunkElements;
    AD_CHECK(count <= INT32_MAX, kInvalidArgument,
             "a variable of {} elements is too large for one fused update", targets_[t].numel);
    for (int64_t c = 0; c < count; ++c) {
      chunks.push_back(ChunkRef{static_cast<int32_t>(t), static_cast<int32_t>(c)});
    }
  }
  chunk_count_ = static_cast<int64_t>(chunks.size());
  if (chunks.empty()) return;
  const size_t targets_bytes = TargetsBytes(targets_.size());
  const size_t bytes = targets_bytes + chunks.size() * sizeof(ChunkRef);
  staging_ = PinnedBuffer(bytes);
  std::memcpy(staging_.data(), targets_.data(), targets_.size() * sizeof(UpdateTarget));
  std::memcpy(static_cast<char*>(staging_.data()) + targets_bytes, chunks.data(),
              chunks.size() * sizeof(ChunkRef));
  tables_ = pool.Allocate(bytes, stream);
  CopyAsync(tables_.data(), staging_.data(), bytes, stream, "uploading a fused update's tables");
}

const ChunkRef* UpdatePlan::device_chunks() const {
  return reinterpret_cast<const ChunkRef*>(tables_.as<char>() + TargetsBytes(targets_.size()));
}

}  // namespace autodist::gpu::detail
