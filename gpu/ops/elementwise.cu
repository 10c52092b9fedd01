// The element-wise CUDA kernels: unary maps and their gradients, broadcast binary maps, and the
// sum of a broadcast gradient back to its operand's shape. The per-element math is the CPU
// kernels' (runtime/ops/math/unary_math.h, arithmetic_math.h), compiled without FMA contraction
// (CMake: --fmad=false), as the CPU build compiles it.
#include "gpu/device/cuda_error.h"
#include "gpu/ops/broadcast.cuh"
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"
#include "runtime/ops/math/arithmetic_math.h"
#include "runtime/ops/math/unary_math.h"

namespace autodist::gpu::detail {
namespace {

template <typename Op>
__global__ void UnaryForwardKernel(const float* x, float* y, int64_t n) {
  for (int64_t i = First(); i < n; i += Stride()) y[i] = Op::Forward(x[i]);
}

template <typename Op>
__global__ void UnaryGradKernel(const float* dy, const float* v, float* dx, int64_t n) {
  for (int64_t i = First(); i < n; i += Stride()) {
    dx[i] = Op::Grad(dy[i], v == nullptr ? 0.0F : v[i]);
  }
}

template <typename Fn>
__global__ void MapUnaryKernel(const float* a, float* out, int64_t n) {
  for (int64_t i = First(); i < n; i += Stride()) out[i] = Fn{}(a[i]);
}

template <typename Fn>
__global__ void BroadcastBinaryKernel(const float* a, const float* b, float* out,
                                      BroadcastPlan plan) {
  for (int64_t i = First(); i < plan.n; i += Stride()) {
    int64_t a_at = 0;
    int64_t b_at = 0;
    BroadcastOffsets(plan, i, &a_at, &b_at);
    out[i] = Fn{}(a[a_at], b[b_at]);
  }
}

// The offset in the input of output o's first term, and of term r of an output.
__device__ int64_t KeptOffset(const SumPlan& plan, int64_t o) {
  int64_t base = 0;
  for (int axis = plan.kept_rank - 1; axis >= 0; --axis) {
    base += o % plan.kept_dims[axis] * plan.kept_strides[axis];
    o /= plan.kept_dims[axis];
  }
  return base;
}
__device__ int64_t ReducedOffset(const SumPlan& plan, int64_t r) {
  if (plan.reduced_rank == 1) return r * plan.reduced_strides[0];  // a bias gradient's rows
  int64_t at = 0;
  for (int axis = plan.reduced_rank - 1; axis >= 0; --axis) {
    at += r % plan.reduced_dims[axis] * plan.reduced_strides[axis];
    r /= plan.reduced_dims[axis];
  }
  return at;
}

// Many outputs of few terms each: one thread per output, summing its terms in order, in double,
// as the CPU adds its partial sums, so the two differ by the CPU's float partial sums at most.
__global__ void SumToShapeKernel(const float* in, float* out, SumPlan plan) {
  for (int64_t o = First(); o < plan.outputs; o += Stride()) {
    const int64_t base = KeptOffset(plan, o);
    double sum = 0.0;
    for (int64_t r = 0; r < plan.reduced_count; ++r) sum += in[base + ReducedOffset(plan, r)];
    out[o] = static_cast<float>(sum);
  }
}

// Few outputs of many terms each (a bias gradient: [batch, n] summed to [n]): one block per
// output, its threads summing every kThreads-th term in double, then a tree; the same bits every
// run. One thread per output would wait on one load after another.
__global__ void __launch_bounds__(kThreads)
    SumToShapeByBlockKernel(const float* in, float* out, SumPlan plan) {
  __shared__ double partial[kThreads];
  for (int64_t o = blockIdx.x; o < plan.outputs; o += gridDim.x) {
    const int64_t base = KeptOffset(plan, o);
    double sum = 0.0;
    for (int64_t r = threadIdx.x; r < plan.reduced_count; r += kThreads) {
      sum += in[base + ReducedOffset(plan, r)];
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int width = kThreads / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = static_cast<float>(partial[0]);
    __syncthreads();
  }
}

__global__ void ScaleKernel(float* data, int64_t n, float factor) {
  for (int64_t i = First(); i < n; i += Stride()) data[i] *= factor;
}

__global__ void DivideKernel(float* data, int64_t n, float divisor) {
  for (int64_t i = First(); i < n; i += Stride()) data[i] /= divisor;
}

}  // namespace

void LaunchScale(float* data, int64_t n, float factor, cudaStream_t stream) {
  if (n == 0) return;
  ScaleKernel<<<Blocks(n), kThreads, 0, stream>>>(data, n, factor);
  CheckCuda(cudaGetLastError(), "launching a scale kernel");
}

template <typename Op>
void LaunchUnaryForward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  UnaryForwardKernel<Op><<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
  CheckCuda(cudaGetLastError(), "launching an element-wise kernel");
}

template <typename Op>
void LaunchUnaryGrad(const float* dy, const float* v, float* dx, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  UnaryGradKernel<Op><<<Blocks(n), kThreads, 0, stream>>>(dy, v, dx, n);
  CheckCuda(cudaGetLastError(), "launching an element-wise gradient kernel");
}

template <typename Fn>
void LaunchMapUnary(const float* a, float* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  MapUnaryKernel<Fn><<<Blocks(n), kThreads, 0, stream>>>(a, out, n);
  CheckCuda(cudaGetLastError(), "launching an element-wise kernel");
}

template <typename Fn>
void LaunchBroadcastBinary(const float* a, const float* b, float* out, const BroadcastPlan& plan,
                           cudaStream_t stream) {
  if (plan.n == 0) return;
  BroadcastBinaryKernel<Fn><<<Blocks(plan.n), kThreads, 0, stream>>>(a, b, out, plan);
  CheckCuda(cudaGetLastError(), "launching a broadcast kernel");
}

void LaunchDivide(float* data, int64_t n, float divisor, cudaStream_t stream) {
  if (n == 0) return;
  DivideKernel<<<Blocks(n), kThreads, 0, stream>>>(data, n, divisor);
}

void LaunchSumToShape(const float* in, float* out, const SumPlan& plan, cudaStream_t stream) {
  if (plan.outputs == 0) return;
  // A block per output when the outputs alone would not fill the GPU and each has terms enough.
  constexpr int64_t kFewOutputs = 16384;
  if (plan.outputs < kFewOutputs && plan.reduced_count >= 64) {
    const auto blocks = static_cast<unsigned>(plan.outputs < 65536 ? plan.outputs : 65536);
    SumToShapeByBlockKernel<<<blocks, kThreads, 0, stream>>>(in, out, plan);
  } else {
    SumToShapeKernel<<<Blocks(plan.outputs), kThreads, 0, stream>>>(in, out, plan);
  }
  CheckCuda(cudaGetLastError(), "launching a sum-to-shape kernel");
}

#define AUTODIST_UNARY_LAUNCHES(Op)                                                       \
  template void LaunchUnaryForward<ops::Op>(const float*, float*, int64_t, cudaStream_t); \
  template void LaunchUnaryGrad<ops::Op>(const float*, const float*, float*, int64_t, cudaStream_t)
AUTODIST_UNARY_LAUNCHES(NegOp);
AUTODIST_UNARY_LAUNCHES(ExpOp);
AUTODIST_UNARY_LAUNCHES(LogOp);
AUTODIST_UNARY_LAUNCHES(SqrtOp);
AUTODIST_UNARY_LAUNCHES(ErfOp);
AUTODIST_UNARY_LAUNCHES(SigmoidOp);
AUTODIST_UNARY_LAUNCHES(TanhOp);
AUTODIST_UNARY_LAUNCHES(ReluOp);
#undef AUTODIST_UNARY_LAUNCHES

#define AUTODIST_BINARY_LAUNCH(Fn)                                            \
  template void LaunchBroadcastBinary<Fn>(const float*, const float*, float*, \
                                          const BroadcastPlan&, cudaStream_t)
using AddFloat = ops::ArithmeticOp<ops::Arithmetic::kAdd, float>;
using SubFloat = ops::ArithmeticOp<ops::Arithmetic::kSub, float>;
using MulFloat = ops::ArithmeticOp<ops::Arithmetic::kMul, float>;
using DivFloat = ops::ArithmeticOp<ops::Arithmetic::kDiv, float>;
AUTODIST_BINARY_LAUNCH(AddFloat);
AUTODIST_BINARY_LAUNCH(SubFloat);
AUTODIST_BINARY_LAUNCH(MulFloat);
AUTODIST_BINARY_LAUNCH(DivFloat);
AUTODIST_BINARY_LAUNCH(ops::TimesOp);
AUTODIST_BINARY_LAUNCH(ops::OverOp);
AUTODIST_BINARY_LAUNCH(ops::NegTimesOp);
AUTODIST_BINARY_LAUNCH(SecondOfTwo);
#undef AUTODIST_BINARY_LAUNCH
template void LaunchMapUnary<ops::NegateOp>(const float*, float*, int64_t, cudaStream_t);

}  // namespace autodist::gpu::detail
