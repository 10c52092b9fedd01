// Internal: one optimizer update over many variables in a few kernel launches (the multi-tensor
// apply of apex and torch's fused optimizers). The variables are cut into chunks of equal size,
// one thread block each, listed in a table on the device that is built once and reused while the
// variables stay where they are.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "gpu/memory/device_pool.h"
#include "gpu/memory/pinned_buffer.h"
#include "runtime/optim/optimizer_state.h"

namespace autodist::gpu::detail {

// One variable of an update: its device pointers, state slots in the rule's order (null past the
// last), and its element count.
struct UpdateTarget {
  float* param = nullptr;
  const float* grad = nullptr;
  float* slots[optim::detail::kMaxBufferSlots] = {};
  int64_t numel = 0;

  bool operator==(const UpdateTarget& other) const;
};

// A chunk of one target: elements [chunk * kChunkElements, ...) of targets[target].
struct ChunkRef {
  int32_t target;
  int32_t chunk;
};

// Elements per thread block.
inline constexpr int64_t kChunkElements = 16384;

// The targets of one update and their chunks, on the device.
class UpdatePlan {
 public:
  UpdatePlan(std::vector<UpdateTarget> targets, DevicePool& pool, cudaStream_t stream);

  // Whether this plan updates exactly `targets` (then it can be launched again as it is).
  bool Covers(const std::vector<UpdateTarget>& targets) const { return targets == targets_; }
  int64_t chunk_count() const { return chunk_count_; }
  const UpdateTarget* device_targets() const { return tables_.as<UpdateTarget>(); }
  const ChunkRef* device_chunks() const;

 private:
  std::vector<UpdateTarget> targets_;
  int64_t chunk_count_ = 0;
  PinnedBuffer staging_;  // the tables on the host, alive until their copy has run
  DeviceBuffer tables_;   // targets, then chunks
};

// Queues `rule` over every chunk of `plan` on `stream`: one launch.
template <typename Rule>
void LaunchUpdate(const Rule& rule, const UpdatePlan& plan, cudaStream_t stream);

// Queues `rule` over rows rows[0, count) (device memory, unique) of `target`, a [rows, ...]
// variable of `row_elements` per row: element i of row rows[j] of the variable and its slots is
// updated from element i of gradient row j (target.grad holds the rows in order). One launch.
template <typename Rule>
void LaunchRowUpdate(const Rule& rule, const UpdateTarget& target, const int64_t* rows,
                     int64_t count, int64_t row_elements, cudaStream_t stream);

// Queues dense = zeros with rows rows[0, count) (device memory, unique) set to values' rows in
// order, `row_elements` floats each: a row-sparse gradient made dense.
void ScatterRowsAsync(const float* values, const int64_t* rows, int64_t count, int64_t row_elements,
                      float* dense, int64_t dense_elements, cudaStream_t stream);

// Queues setting n floats at `data` to `value`.
void FillAsync(float* data, int64_t n, float value, cudaStream_t stream);

}  // namespace autodist::gpu::detail
