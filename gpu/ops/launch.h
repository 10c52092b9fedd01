// Internal: the launches of gpu/ops' CUDA kernels, callable from host code (the kernels' .cu files
// define them; the OpKernel classes that call them are plain C++, since nvcc does not compile our
// fmt-formatted error checks). Every launch is queued on `stream` and returns at once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "runtime/tensor/tensor.h"

namespace autodist::gpu::detail {

// Most axes a broadcast or a reduction here takes after merging adjacent ones.
inline constexpr int kMaxRank = 8;

// Broadcasting two operands to an output: dims of the output and each operand's strides in
// elements (0 on broadcast axes), adjacent axes merged where both stay contiguous.
struct BroadcastPlan {
  int rank = 0;
  int64_t n = 0;  // output elements
  int64_t dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};
BroadcastPlan PlanBroadcast(const tensor::Shape& a, const tensor::Shape& b,
                            const tensor::Shape& out, const std::string& what);

// Summing a tensor over the axes along which `target` was broadcast to it: each output element
// sums `reduced_count` inputs.
struct SumPlan {
  int kept_rank = 0;
  int reduced_rank = 0;
  int64_t outputs = 0;
  int64_t reduced_count = 0;
  int64_t kept_dims[kMaxRank] = {};
  int64_t kept_strides[kMaxRank] = {};  // in the input
  int64_t reduced_dims[kMaxRank] = {};
  int64_t reduced_strides[kMaxRank] = {};
};
SumPlan PlanSumToShape(const tensor::Shape& from, const tensor::Shape& target,
                       const std::string& what);

template <typename Op>
void LaunchUnaryForward(const float* x, float* y, int64_t n, cudaStream_t stream);
// dx = Op::Grad(dy, v), v the input, the output or nothing (null) as Op::kReads says.
template <typename Op>
void LaunchUnaryGrad(const float* dy, const float* v, float* dx, int64_t n, cudaStream_t stream);

// out = fn(a, b) as `plan` broadcasts them; Fn is one of arithmetic_math.h's functors.
template <typename Fn>
void LaunchBroadcastBinary(const float* a, const float* b, float* out, const BroadcastPlan& plan,
                           cudaStream_t stream);
// out[i] = fn(a[i]) for i in [0, n).
template <typename Fn>
void LaunchMapUnary(const float* a, float* out, int64_t n, cudaStream_t stream);

void LaunchSumToShape(const float* in, float* out, const SumPlan& plan, cudaStream_t stream);

}  // namespace autodist::gpu::detail
