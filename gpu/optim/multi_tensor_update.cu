// The kernel of multi_tensor_update.h. Each block takes one chunk; each thread loads 16-byte
// vectors of every array (where all are aligned), applies the rule to them in registers and
// stores them back, so that the update streams memory at close to the device's bandwidth. The
// per-element math is the CPU's (runtime/optim/rules/), compiled without contracting a * b + c
// into FMAs (CMake: --fmad=false), so both backends round alike.
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
// Each thread moves kUnroll float4 of every array before it computes: enough loads in flight to
// stream at close to the device's bandwidth (measured on an H100: docs/gpu.md).
constexpr int kUnroll = 4;
constexpr int kPerThread = 4 * kUnroll;
constexpr int kSlots = static_cast<int>(optim::detail::kMaxBufferSlots);

__device__ bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15U) == 0; }

// The registers of kPerThread elements of the variable, its gradient and its slots. Every index
// into them is a compile-time constant (unrolled loops), so they stay in registers: indexed at
// run time, they would go to local memory, and the kernel would run at half speed.
struct Registers {
  float p[kPerThread];
  float g[kPerThread];
  float s[kSlots][kPerThread];
};

__device__ void Load4(const float* at, float* out) {
  const float4 v = *reinterpret_cast<const float4*>(at);
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

__device__ void Store4(float* at, const float* in) {
  *reinterpret_cast<float4*>(at) = make_float4(in[0], in[1], in[2], in[3]);
}

// The chunk's elements [0, n4), n4 a multiple of 4, every array 16-byte aligned.
template <typename Rule, typename Variant>
__device__ void UpdateVectors(const Rule& rule, float* p, const float* g, float* const* slots,
                              int64_t n4) {
  for (int64_t base = static_cast<int64_t>(threadIdx.x) * 4; base < n4;
       base += static_cast<int64_t>(kThreads) * kPerThread) {
    Registers r;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t at = base + static_cast<int64_t>(u) * kThreads * 4;
      if (at < n4) {
        Load4(p + at, r.p + 4 * u);
        Load4(g + at, r.g + 4 * u);
#pragma unroll
        for (int s = 0; s < kSlots; ++s) {
          if (slots[s] != nullptr) Load4(slots[s] + at, r.s[s] + 4 * u);
        }
      }
    }
#pragma unroll
    for (int e = 0; e < kPerThread; ++e) {
      rule.Update(Variant{}, e, r.p, r.g, r.s[0], r.s[1], r.s[2]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t at = base + static_cast<int64_t>(u) * kThreads * 4;
      if (at < n4) {
        Store4(p + at, r.p + 4 * u);
#pragma unroll
        for (int s = 0; s < kSlots; ++s) {
          if (slots[s] != nullptr) Store4(slots[s] + at, r.s[s] + 4 * u);
        }
      }
    }
  }
}

// Elements [begin, n) one at a time (unaligned arrays, and the last few of a variable).
template <typename Rule, typename Variant>
__device__ void UpdateScalars(const Rule& rule, float* p, const float* g, float* const* slots,
                              int64_t begin, int64_t n) {
  for (int64_t i = begin + threadIdx.x; i < n; i += kThreads) {
    float rp[1] = {p[i]};
    float rg[1] = {g[i]};
    float rs[kSlots][1] = {};
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (slots[s] != nullptr) rs[s][0] = slots[s][i];
    }
    rule.Update(Variant{}, 0, rp, rg, rs[0], rs[1], rs[2]);
    p[i] = rp[0];
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (slots[s] != nullptr) slots[s][i] = rs[s][0];
    }
  }
}

template <typename Rule, typename Variant>
__global__ void __launch_bounds__(kThreads)
    MultiTensorKernel(Rule rule, const UpdateTarget* targets, const ChunkRef* chunks) {
  const ChunkRef chunk = chunks[blockIdx.x];
  const UpdateTarget target = targets[chunk.target];
  const int64_t begin = static_cast<int64_t>(chunk.chunk) * kChunkElements;
  const int64_t n = target.numel - begin < kChunkElements ? target.numel - begin : kChunkElements;
  float* p = target.param + begin;
  const float* g = target.grad + begin;
  float* slots[kSlots];
  bool aligned = Aligned16(p) && Aligned16(g);
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    slots[s] = target.slots[s] == nullptr ? nullptr : target.slots[s] + begin;
    aligned = aligned && (slots[s] == nullptr || Aligned16(slots[s]));
  }
  const int64_t vectors_end = aligned ? n / 4 * 4 : 0;
  UpdateVectors<Rule, Variant>(rule, p, g, slots, vectors_end);
  UpdateScalars<Rule, Variant>(rule, p, g, slots, vectors_end, n);
}

// One element of a present row per thread, as UpdateScalars does.
template <typename Rule, typename Variant>
__global__ void RowKernel(Rule rule, UpdateTarget target, const int64_t* rows, int64_t count,
                          int64_t row_elements) {
  const int64_t total = count * row_elements;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = e / row_elements;
    const int64_t at = rows[j] * row_elements + e % row_elements;
    float rp[1] = {target.param[at]};
    float rg[1] = {target.grad[e]};
    float rs[kSlots][1] = {};
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (target.slots[s] != nullptr) rs[s][0] = target.slots[s][at];
    }
    rule.Update(Variant{}, 0, rp, rg, rs[0], rs[1], rs[2]);
    target.param[at] = rp[0];
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (target.slots[s] != nullptr) target.slots[s][at] = rs[s][0];
    }
  }
}

__global__ void ScatterRowsKernel(const float* values, const int64_t* rows, int64_t count,
                                  int64_t row_elements, float* dense) {
  const int64_t total = count * row_elements;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dense[rows[e / row_elements] * row_elements + e % row_elements] = values[e];
  }
}

unsigned GridFor(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096));
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

template <typename Rule>
void LaunchRowUpdate(const Rule& rule, const UpdateTarget& target, const int64_t* rows,
                     int64_t count, int64_t row_elements, cudaStream_t stream) {
  if (count == 0 || row_elements == 0) return;
  rule.Visit([&](auto variant) {
    RowKernel<Rule, decltype(variant)><<<GridFor(count * row_elements), kThreads, 0, stream>>>(
        rule, target, rows, count, row_elements);
  });
  CheckCuda(cudaGetLastError(), "launching a fused optimizer update of present rows");
}

template void LaunchRowUpdate(const optim::detail::SgdRule&, const UpdateTarget&, const int64_t*,
                              int64_t, int64_t, cudaStream_t);
template void LaunchRowUpdate(const optim::detail::AdamRule&, const UpdateTarget&, const int64_t*,
                              int64_t, int64_t, cudaStream_t);
template void LaunchRowUpdate(const optim::detail::AdagradRule&, const UpdateTarget&,
                              const int64_t*, int64_t, int64_t, cudaStream_t);
template void LaunchRowUpdate(const optim::detail::RmspropRule&, const UpdateTarget&,
                              const int64_t*, int64_t, int64_t, cudaStream_t);

void ScatterRowsAsync(const float* values, const int64_t* rows, int64_t count, int64_t row_elements,
                      float* dense, int64_t dense_elements, cudaStream_t stream) {
  CheckCuda(cudaMemsetAsync(dense, 0, static_cast<size_t>(dense_elements) * sizeof(float), stream),
            "zeroing a densified gradient");
  if (count == 0 || row_elements == 0) return;
  ScatterRowsKernel<<<GridFor(count * row_elements), 256, 0, stream>>>(values, rows, count,
                                                                       row_elements, dense);
  CheckCuda(cudaGetLastError(), "launching the densifying of a sparse gradient");
}

template void LaunchUpdate(const optim::detail::SgdRule&, const UpdatePlan&, cudaStream_t);
template void LaunchUpdate(const optim::detail::AdamRule&, const UpdatePlan&, cudaStream_t);
template void LaunchUpdate(const optim::detail::AdagradRule&, const UpdatePlan&, cudaStream_t);
template void LaunchUpdate(const optim::detail::RmspropRule&, const UpdatePlan&, cudaStream_t);

void FillAsync(float* data, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  FillKernel<<<GridFor(n), 256, 0, stream>>>(data, n, value);
  CheckCuda(cudaGetLastError(), "launching a fill of optimizer state");
}

}  // namespace autodist::gpu::detail
