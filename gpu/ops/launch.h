// Internal: the launches of gpu/ops' CUDA kernels, callable from host code (the kernels' .cu files
// define them; the OpKernel classes that call them are plain C++, since nvcc does not compile our
// fmt-formatted error checks). Every launch is queued on `stream` and returns at once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "runtime/common/host_device.h"
#include "runtime/ops/activation/softmax_layout.h"
#include "runtime/ops/nn/window_geometry.h"
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

// Gather over the [outer, dim, inner] view of the data: dst[o, j, k] = src[o, idx[j], k] for
// j < n, idx on the device and in [0, dim). Elements of 4 or 8 bytes.
void LaunchGatherRows(const void* src, void* dst, const int64_t* idx, int64_t outer, int64_t n,
                      int64_t dim, int64_t inner, size_t element_size, cudaStream_t stream);

// Gather's gradient: for each of the `unique` rows named, dx[o, rows[u], k] = the sum over
// p in [starts[u], starts[u + 1]) of dy[o, positions[p], k], in that order from zero; the
// other rows of dx are left as they are (zeroed by the caller). The arrays on the device.
struct GatherGradPlan {
  const int64_t* rows = nullptr;       // [unique]
  const int64_t* starts = nullptr;     // [unique + 1]
  const int64_t* positions = nullptr;  // [n], grouped by row, ascending within a row
  int64_t unique = 0;
  int64_t outer = 0;
  int64_t n = 0;
  int64_t dim = 0;
  int64_t inner = 0;
  // Row u of the output is rows[u] of the table (a dense gradient, `dim` rows), or with `compact`
  // row u itself (the values of a row-sparse gradient, `unique` rows).
  bool compact = false;
};
void LaunchGatherGrad(const float* dy, float* dx, const GatherGradPlan& plan, cudaStream_t stream);

// Pow's passes (pow.cu): the value x^e, or the factor of the base's or the exponent's gradient,
// times g when g is not null. LaunchPowScalar: a one-element exponent `e` over x of n elements,
// in the CPU's exact forms; LaunchPowBroadcast: x and e broadcast to the output as `plan` says.
enum class PowTerm { kValue, kBaseFactor, kExponentFactor };
void LaunchPowScalar(const float* x, float e, const float* g, float* out, int64_t n, PowTerm term,
                     cudaStream_t stream);
void LaunchPowBroadcast(const float* x, const float* e, const float* g, float* out,
                        const BroadcastPlan& plan, PowTerm term, cudaStream_t stream);

// Dropout with the CPU's mask of (seed, index): mask[i] = kept, y[i] = kept ? x[i] * scale : 0;
// and its gradient dx[i] = mask[i] ? dy[i] * scale : 0.
void LaunchDropout(const float* x, float* y, bool* mask, int64_t n, uint64_t seed,
                   uint64_t threshold, float scale, cudaStream_t stream);
void LaunchDropoutGrad(const float* dy, const bool* mask, float* dx, int64_t n, float scale,
                       cudaStream_t stream);

// LeakyRelu: y = x * (x > 0 ? 1 : alpha); its gradient dx = dy * (v > 0 ? 1 : alpha), v the
// output (alpha >= 0) or the input.
void LaunchLeakyRelu(const float* x, float* y, int64_t n, float alpha, cudaStream_t stream);
void LaunchLeakyReluGrad(const float* dy, const float* v, float* dx, int64_t n, float alpha,
                         cudaStream_t stream);

// data[i] /= divisor for i in [0, n).
void LaunchDivide(float* data, int64_t n, float divisor, cudaStream_t stream);
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
// NegativeLogLikelihoodLoss's input gradient (the input being log-probabilities): at each
// row's target -w * scale, scale dl[row] (per_row) or dl[0] / divisor[0]; the rest untouched.
void LaunchNllGrad(const CrossEntropyShape& shape, const float* dl, bool per_row,
                   const float* divisor, float* g, cudaStream_t stream);
// g = d loss / d x from the loss gradient dl (one per row when `per_row`, else a scalar divided
// by divisor[0], null for none) and the log_prob output's gradient dlp (null for none).
void LaunchCrossEntropyGrad(const float* lp, const CrossEntropyShape& shape, const float* dl,
                            bool per_row, const float* divisor, const float* dlp, float* g,
                            cudaStream_t stream);

// A tensor viewed as [batch, channels, inner]: NCHW's channel axis in the middle.
struct ChannelLayout {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t inner = 0;
  AUTODIST_HOST_DEVICE int64_t count() const { return batch * inner; }  // elements per channel
};

// What LaunchChannelSums adds up, per channel c, over every (n, i); each term is computed in
// float, as the CPU kernels compute it, and summed in double.
enum class ChannelSum {
  kValues,            // sums[c] = Σ a
  kSquaredDeviation,  // sums[c] = Σ (a - center[c])²
  kGradientMoments,   // sums[c] = Σ a, sums[C + c] = Σ a (b - center[c])  (a = dY, b = X)
};
// Doubles of scratch LaunchChannelSums needs for `layout`. Throws InvalidArgument naming `what`
// for more channels than a grid holds (kMaxChannels).
inline constexpr int64_t kMaxChannels = 65535;  // a grid's y dimension, one channel each
int64_t ChannelSumScratch(const ChannelLayout& layout, const std::string& what);
// The slices each channel's sum is cut into (channel_sums.cu).
int64_t ChannelSumSlices(const ChannelLayout& layout);
// Per-channel sums in a fixed order (the same bits every run): into sums[0, C), and [C, 2C) for
// kGradientMoments. `b` and `center` are read only by the kinds that name them.
void LaunchChannelSums(ChannelSum kind, const float* a, const float* b, const float* center,
                       const ChannelLayout& layout, double* scratch, double* sums,
                       cudaStream_t stream);
// out[i] = (float)in[i], i in [0, n).
void LaunchDoubleToFloat(const double* in, float* out, int64_t n, cudaStream_t stream);

// BatchNormalization's per-channel constants (y = x * alpha + beta) and what it keeps for
// backward, from the batch sums (training: sums[c] = Σ x, squares[c] = Σ (x - mean)²) or from
// input_mean / input_var (inference: sums and squares null). Training also writes the running
// statistics (PyTorch's unbiased variance in running_var) and the batch variance, each where
// the pointer is not null.
struct BatchNormStatistics {
  const double* sums = nullptr;
  const double* squares = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
  const float* input_mean = nullptr;
  const float* input_var = nullptr;
  int64_t channels = 0;
  int64_t count = 0;  // elements per channel
  float epsilon = 0.0F;
  float momentum = 0.0F;
  float* mean = nullptr;    // [C] batch mean, or input_mean
  float* invstd = nullptr;  // [C]
  float* alpha = nullptr;   // [C]
  float* beta = nullptr;    // [C]
  float* running_mean = nullptr;
  float* running_var = nullptr;
  float* batch_var = nullptr;
};
// mean[c] = sums[c] / count (the center of the squares' pass), C = channels.
void LaunchBatchMean(const double* sums, int64_t channels, int64_t count, float* mean,
                     cudaStream_t stream);
void LaunchBatchNormStatistics(const BatchNormStatistics& statistics, cudaStream_t stream);
// y = x * alpha[c] + beta[c].
void LaunchChannelAffine(const float* x, const float* alpha, const float* beta,
                         const ChannelLayout& layout, float* y, cudaStream_t stream);

// BatchNormalization's backward: per channel, dscale and dbias (each where not null) and the
// constants of dx = a dy + b x + k, from Σ dy and Σ dy (x - mean) (`moments`, 2C doubles, null
// without a dY) and the gradients reaching the statistics outputs (each null when none).
struct BatchNormGradient {
  const double* moments = nullptr;
  const float* scale = nullptr;
  const float* mean = nullptr;
  const float* invstd = nullptr;
  const float* d_running_mean = nullptr;
  const float* d_running_var = nullptr;
  const float* d_saved_mean = nullptr;
  const float* d_saved_var = nullptr;
  bool training = false;
  int64_t channels = 0;
  int64_t count = 0;
  float momentum = 0.0F;
  float* dscale = nullptr;
  float* dbias = nullptr;
  float* coefficients = nullptr;  // [3C]: a, b, k per channel
};
void LaunchBatchNormGradient(const BatchNormGradient& gradient, cudaStream_t stream);
// dx = a[c] dy + b[c] x + k[c] (dy null: b[c] x + k[c]), coefficients as above.
void LaunchBatchNormInputGradient(const float* dy, const float* x, const float* coefficients,
                                  const ChannelLayout& layout, float* dx, cudaStream_t stream);

// 2-D windows over [N, C, H, W]: runtime/ops/nn/window_geometry.h's geometry, whose per-position
// math the kernels share with the CPU's.
using Window2d = ops::nn::WindowGeometry;

// Conv's column matrix of the whole batch: col [C * kH * kW, N * outH * outW], row (c, i, j)
// holding the input under tap (i, j) of channel c for every (image, output position), zero in
// the padding; so one GEMM per group covers the batch.
void LaunchIm2Col(const float* x, int64_t batch, int64_t channels, const Window2d& g, float* col,
                  cudaStream_t stream);
// Its adjoint: dx [N, C, H, W] = the sum of the column entries each element was copied to, in
// the CPU's order (taps row-major), gathered per element (no atomics).
void LaunchCol2Im(const float* col, int64_t batch, int64_t channels, const Window2d& g, float* dx,
                  cudaStream_t stream);
// out [B, A, P] from in [A, B, P], plus bias[a] where bias is not null.
void LaunchSwapLeadingAxes(const float* in, int64_t a, int64_t b, int64_t p, const float* bias,
                           float* out, cudaStream_t stream);

// MaxPool over `planes` planes: y and argmax (index within the input plane, -1 for a window in
// the padding), as the CPU computes them (window_geometry.h's MaxOfWindow).
void LaunchMaxPool(const float* x, int64_t planes, const Window2d& g, float* y, int32_t* argmax,
                   cudaStream_t stream);
// ONNX's Indices output from argmax: flat indices into X, row-major or (column_major) with H and
// W swapped; -1 stays -1.
void LaunchMaxPoolIndices(const int32_t* argmax, int64_t planes, const Window2d& g,
                          bool column_major, int64_t* indices, cudaStream_t stream);
// AveragePool (no dilation): the mean of each window, with count_include_pad's divisor, and its
// gradient, each output's share added to its taps in output order.
void LaunchAveragePool(const float* x, int64_t planes, const Window2d& g, bool count_include_pad,
                       float* y, cudaStream_t stream);
void LaunchAveragePoolGrad(const float* dy, int64_t planes, const Window2d& g,
                           bool count_include_pad, float* dx, cudaStream_t stream);
// GlobalAveragePool: out[p] = (float)(Σ_i x[p * size + i]) * inverse (the sum in double), and its
// gradient dx[p * size + i] = dy[p] * inverse.
void LaunchPlaneMeans(const float* x, int64_t planes, int64_t size, float inverse, float* out,
                      cudaStream_t stream);
void LaunchPlaneBroadcast(const float* dy, int64_t planes, int64_t size, float inverse, float* dx,
                          cudaStream_t stream);
// dx = each output's gradient routed to its argmax, summed per input element in output order.
void LaunchMaxPoolGrad(const float* dy, const int32_t* argmax, int64_t planes, const Window2d& g,
                       float* dx, cudaStream_t stream);

// LayerNormalization over X as [rows, size], Scale and B expanded to [size]: Y, and each row's
// mean and 1 / std (ops/nn/layer_normalization.cc's formulas).
void LaunchLayerNormForward(const float* x, const float* scale, const float* bias, int64_t rows,
                            int64_t size, float epsilon, float* y, float* mean, float* invstd,
                            cudaStream_t stream);
// dX from dY (null for none) and the gradients reaching Mean and InvStdDev (each null for none).
void LaunchLayerNormInputGrad(const float* dy, const float* x, const float* scale,
                              const float* mean, const float* invstd, const float* d_mean,
                              const float* d_invstd, int64_t rows, int64_t size, float* dx,
                              cudaStream_t stream);
// dScale and dB over the normalized shape ([size] each), from dY; `scratch` holds
// 2 * LayerNormColumnSlices(rows) * size doubles.
int64_t LayerNormColumnSlices(int64_t rows);
void LaunchLayerNormParamGrads(const float* dy, const float* x, const float* mean,
                               const float* invstd, int64_t rows, int64_t size, double* scratch,
                               float* dscale, float* dbias, cudaStream_t stream);

// A strided copy (Transpose): out[e], e a row-major index over `dims`, is in[Σ coordinate_i *
// in_strides[i]]. Elements of 4 or 8 bytes (element_size).
struct StridedCopyPlan {
  int rank = 0;
  int64_t n = 0;
  int64_t dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
};
void LaunchStridedCopy(const void* in, void* out, size_t element_size, const StridedCopyPlan& plan,
                       cudaStream_t stream);
// The reverse (Slice's gradient): in[e], e a row-major index over `dims`, goes to
// out[Σ coordinate_i * in_strides[i]]; the positions must not repeat.
void LaunchStridedScatter(const void* in, void* out, size_t element_size,
                          const StridedCopyPlan& plan, cudaStream_t stream);

// Split's copy: dst[o, dst_offset + j, i] = src[o, src_offset + j, i] for j < count, both viewed
// as [outer, axis, inner] with their own axis lengths. Elements of 4 or 8 bytes.
void LaunchCopyAxisRange(const void* src, int64_t src_axis, int64_t src_offset, void* dst,
                         int64_t dst_axis, int64_t dst_offset, int64_t count, int64_t outer,
                         int64_t inner, size_t element_size, cudaStream_t stream);

// Softmax (kLog false) or LogSoftmax (true) over the [outer, n, inner] view, and its gradient
// from dY and the output Y.
template <bool kLog>
void LaunchSoftmax(const float* x, float* y, const ops::SoftmaxLayout& layout, cudaStream_t stream);
template <bool kLog>
void LaunchSoftmaxGrad(const float* dy, const float* y, float* dx, const ops::SoftmaxLayout& layout,
                       cudaStream_t stream);

// fn(a, b) = b: with LaunchBroadcastBinary, copies b broadcast to the output (a is not read).
struct SecondOfTwo {
  AUTODIST_HOST_DEVICE float operator()(float /*a*/, float b) const { return b; }
};

}  // namespace autodist::gpu::detail
