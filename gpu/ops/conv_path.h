// Internal: which implementation runs a 2-D Conv on CUDA, per shape and direction. Two paths
// compute the same convolution: im2col (a column matrix and cuBLASLt products, conv_kernel.cc)
// and cuDNN (cudnn_conv.h). Neither wins everywhere: cuDNN's implicit-GEMM and Winograd kernels
// skip the column matrix, while im2col's one product per group over a whole chunk suits small
// images. So by default the first run of a shape times both and keeps the faster, per direction,
// as gpu/blas/matmul.cc keeps the fastest cuBLASLt candidate per shape. AUTODIST_CONV_PATH pins
// either path instead. This file is plain C++ (no CUDA calls): the choice's rules, testable
// without a GPU.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gpu/blas/matmul.h"
#include "gpu/ops/choice_cache.h"
#include "runtime/ops/nn/conv_geometry.h"

namespace autodist::gpu::conv {

// The environment variable that pins the path: "measured" (the default, also when unset or
// empty), "im2col" or "cudnn".
inline constexpr const char* kConvPathEnv = "AUTODIST_CONV_PATH";

enum class ConvPathMode : uint8_t { kMeasured, kIm2col, kCudnn };
enum class ConvPath : uint8_t { kIm2col, kCudnn };
// The three products of a convolution: Y, dX (cuDNN's "backward data") and dW ("backward
// filter"). B's gradient is a channel sum on either path.
enum class ConvDirection : uint8_t { kForward, kBackwardData, kBackwardFilter };

// The mode `text` names (null or empty: measured). Throws InvalidArgument naming kConvPathEnv and
// the accepted values otherwise.
ConvPathMode ParseConvPathMode(const char* text);
std::string_view ConvPathModeName(ConvPathMode mode);
std::string_view ConvPathName(ConvPath path);
std::string_view ConvDirectionName(ConvDirection direction);

// Everything a path's speed depends on: the GPU, the tensors' shapes, the window, the groups, and
// the arithmetic the session allows (TF32 changes which kernels qualify).
struct ConvShapeKey {
  int device = 0;
  int64_t batch = 0, channels = 0, height = 0, width = 0, out_channels = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 0, stride_w = 0;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 0, dilation_w = 0, group = 0;
  GemmMath math = GemmMath::kFp32;
  auto operator<=>(const ConvShapeKey&) const = default;
};
ConvShapeKey ConvShapeKeyOf(const ops::nn::ConvGeometry& s, GemmMath math, int device);

// Whether cuDNN's 2-D descriptor describes the convolution: it pads both ends of an axis alike
// (the begin padding here), so asymmetric padding qualifies only where the end padding changes
// no output (the output size with the begin padding on both ends is the same), and it counts
// in int.
bool CudnnDescribes(const ops::nn::ConvGeometry& s);

// One of cuDNN's algorithms for a direction, as its search reported it.
struct CudnnAlgorithm {
  int algorithm = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  int math_type = 0;  // cudnnMathType_t to run it with
  size_t workspace_bytes = 0;
  float ms = 0.0F;  // cuDNN's own time of it
};

// What a shape and direction run: the path, cuDNN's algorithm when it is cuDNN, and the times
// that chose it (negative where not measured).
struct ConvChoice {
  ConvPath path = ConvPath::kIm2col;
  CudnnAlgorithm cudnn;
  float im2col_ms = -1.0F;
  float cudnn_ms = -1.0F;
};

// The measured choice: cuDNN when it has an algorithm for the shape and ran faster than im2col
// (ties keep im2col, whose results the parity tests have held longest).
ConvPath FasterPath(std::optional<float> cudnn_ms, float im2col_ms);

// The choices made so far, per shape, direction and mode, shared by every Conv node of the
// process (layers of one shape decide once; ChoiceCache::Global). Thread-safe.
using ConvChoiceCache = ChoiceCache<ConvChoice, ConvShapeKey, ConvDirection, ConvPathMode>;

}  // namespace autodist::gpu::conv
