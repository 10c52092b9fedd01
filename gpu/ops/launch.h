// Internal: the launches of gpu/ops' CUDA kernels, callable from host code (the kernels' .cu files
// define them; the OpKernel classes that call them are plain C++, since nvcc does not compile our
// fmt-formatted error checks). Every launch is queued on `stream` and returns at once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "runtime/common/host_device.h"
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

// data[i] *= factor for i in [0, n).
void LaunchScale(float* data, int64_t n, float factor, cudaStream_t stream);

// Softmax cross-entropy over [N, C, D] scores (D the product of the trailing axes), class axis
// in the middle, labels [N * D] on the device.
struct CrossEntropyShape {
  int64_t n = 0;
  int64_t c = 0;
  int64_t d = 0;
  const int64_t* labels = nullptr;
  const float* weights = nullptr;  // [C] or null
  bool has_ignore_index = false;
  int64_t ignore_index = 0;
};

// lp = log_softmax(x) along the class axis.
void LaunchLogSoftmax(const float* x, float* lp, const CrossEntropyShape& shape,
                      cudaStream_t stream);
// The losses -w[t] lp[t] per row (`reduce` false: out [N * D]) or their sum (`reduce` true:
// out[0]), with the weights' sum of the rows counted written to weight_sum[0] (a float, as the
// CPU keeps it); `mean` divides the sum by it.
void LaunchNll(const float* lp, const CrossEntropyShape& shape, bool reduce, bool mean, float* out,
               float* weight_sum, cudaStream_t stream);
// g = d loss / d x from the loss gradient dl (one per row when `per_row`, else a scalar divided
// by divisor[0], null for none) and the log_prob output's gradient dlp (null for none).
void LaunchCrossEntropyGrad(const float* lp, const CrossEntropyShape& shape, const float* dl,
                            bool per_row, const float* divisor, const float* dlp, float* g,
                            cudaStream_t stream);

// fn(a, b) = b: with LaunchBroadcastBinary, copies b broadcast to the output (a is not read).
struct SecondOfTwo {
  AUTODIST_HOST_DEVICE float operator()(float /*a*/, float b) const { return b; }
};

}  // namespace autodist::gpu::detail
