// The kernel of multi_tensor_update.h. Each block takes one chunk; each thread moves four
// consecutive elements of every array at a time (16-byte loads where all arrays are aligned) and
// applies the rule to them in registers, so that the update streams memory at close to the
// device's bandwidth. The per-element math is the CPU's (runtime/optim/rules/), compiled without
// contracting a * b + c into FMAs (CMake: --fmad=false), so both backends round alike.
#include <algorithm>

#include "gpu/device/cuda_error.h"
#include "gpu/optim/multi_tensor_update.h"
#include "runtime/optim/rules/adagrad.h"
#include "runtime/optim/rules/adam.h"
#include "runtime/optim/rules/rmsprop.h"
#include "runtime/optim/rules/sgd.h"

namespace autodist::gpu::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kVector = 4;  // elements per thread per pass
constexpr int kSlots = static_cast<int>(optim::detail::kMaxBufferSlots);

__device__ bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15U) == 0; }

// Loads up to kVector elements at `at` (of `count` valid) into `out`.
__device__ void Load(const float* at, bool vector, int count, float* out) {
  if (vector) {
    const float4 v = *reinterpret_cast<const float4*>(at);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
    return;
  }
  for (int k = 0; k < kVector; ++k) out[k] = k < count ? at[k] : 0.0F;
}

__device__ void Store(float* at, bool vector, int count, const float* in) {
  if (vector) {
    *reinterpret_cast<float4*>(at) = make_float4(in[0], in[1], in[2], in[3]);
    return;
  }
  for (int k = 0; k < count; ++k) at[k] = in[k];
}

template <typename Rule, typename Variant>
__global__ void __launch_bounds__(kThreads)
    MultiTensorKernel(Rule rule, const UpdateTarget* targets, const ChunkRef* chunks) {
  const ChunkRef chunk = chunks[blockIdx.x];
  const UpdateTarget target = targets[chunk.target];
  const int64_t begin = static_cast<int64_t>(chunk.chunk) * kChunkElements;
  const int64_t n = min(kChunkElements, target.numel - begin);
  float* p = target.param + begin;
  const float* g = target.grad + begin;
  float* slots[kSlots];
  bool aligned = Aligned16(p) && Aligned16(g);
  for (int s = 0; s < kSlots; ++s) {
    slots[s] = target.slots[s] == nullptr ? nullptr : target.slots[s] + begin;
    aligned = aligned && (slots[s] == nullptr || Aligned16(slots[s]));
  }
  for (int64_t base = static_cast<int64_t>(threadIdx.x) * kVector; base < n;
       base += static_cast<int64_t>(kThreads) * kVector) {
    const int count = n - base < kVector ? static_cast<int>(n - base) : kVector;
    const bool vector = aligned && count == kVector;
    float rp[kVector];
    float rg[kVector];
    float rs[kSlots][kVector] = {};
    Load(p + base, vector, count, rp);
    Load(g + base, vector, count, rg);
    for (int s = 0; s < kSlots; ++s) {
      if (slots[s] != nullptr) Load(slots[s] + base, vector, count, rs[s]);
    }
#pragma unroll
    for (int k = 0; k < kVector; ++k) {
      if (k < count) rule.Update(Variant{}, k, rp, rg, rs[0], rs[1], rs[2]);
    }
    Store(p + base, vector, count, rp);
    for (int s = 0; s < kSlots; ++s) {
      if (slots[s] != nullptr) Store(slots[s] + base, vector, count, rs[s]);
    }
  }
}

__global__ void FillKernel(float* data, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    data[i] = value;
  }
}

}  // namespace

template <typename Rule>
void LaunchUpdate(const Rule& rule, const UpdatePlan& plan, cudaStream_t stream) {
  if (plan.chunk_count() == 0) return;
  rule.Visit([&](auto variant) {
    MultiTensorKernel<Rule, decltype(variant)>
        <<<static_cast<unsigned>(plan.chunk_count()), kThreads, 0, stream>>>(
            rule, plan.device_targets(), plan.device_chunks());
  });
  CheckCuda(cudaGetLastError(), "launching a fused optimizer update");
}

template void LaunchUpdate(const optim::detail::SgdRule&, const UpdatePlan&, cudaStream_t);
template void LaunchUpdate(const optim::detail::AdamRule&, const UpdatePlan&, cudaStream_t);
template void LaunchUpdate(const optim::detail::AdagradRule&, const UpdatePlan&, cudaStream_t);
template void LaunchUpdate(const optim::detail::RmspropRule&, const UpdatePlan&, cudaStream_t);

void FillAsync(float* data, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096));
  FillKernel<<<blocks, 256, 0, stream>>>(data, n, value);
  CheckCuda(cudaGetLastError(), "launching a fill of optimizer state");
}

}  // namespace autodist::gpu::detail
