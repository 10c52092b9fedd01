// Internal: which implementation runs a 2-D MaxPool or AveragePool on CUDA, per shape and
// direction. Two paths: our kernels (pool.cu, the CPU's own window math from window_geometry.h)
// and cuDNN's legacy pooling (cudnn_pool.h). As for Conv (conv_path.h), the first run of a shape
// times both by default and keeps the faster, and AUTODIST_POOL_PATH pins either. cuDNN takes a
// shape only where it computes what the CPU defines (CudnnDescribesPool, CudnnMayTake);
// everything else stays on our kernels. Plain C++ (no CUDA calls): testable without a GPU.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gpu/ops/choice_cache.h"
#include "runtime/ops/nn/window_geometry.h"

namespace autodist::gpu::pool {

// The environment variable that pins the path: "measured" (the default, also when unset or
// empty), "ours" or "cudnn".
inline constexpr const char* kPoolPathEnv = "AUTODIST_POOL_PATH";

enum class PoolPathMode : uint8_t { kMeasured, kOurs, kCudnn };
enum class PoolPath : uint8_t { kOurs, kCudnn };
enum class PoolDirection : uint8_t { kForward, kBackward };
// What a window computes: its maximum, or its mean over the input elements in it
// (count_include_pad 0) or over the window clipped to the padded input (count_include_pad 1).
enum class PoolKind : uint8_t { kMax, kAverageExcludingPadding, kAverageIncludingPadding };

// The mode `text` names (null or empty: measured). Throws InvalidArgument naming kPoolPathEnv and
// the accepted values otherwise.
PoolPathMode ParsePoolPathMode(const char* text);
std::string_view PoolPathModeName(PoolPathMode mode);
std::string_view PoolPathName(PoolPath path);
std::string_view PoolDirectionName(PoolDirection direction);
std::string_view PoolKindName(PoolKind kind);

// Everything a path's speed depends on: the GPU, what the window computes, the tensors' shapes and
// the window. No precision: pooling has no products, and both paths compute in fp32.
struct PoolShapeKey {
  int device = 0;
  PoolKind kind = PoolKind::kMax;
  int64_t batch = 0, channels = 0, height = 0, width = 0, out_height = 0, out_width = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 0, stride_w = 0;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 0, dilation_w = 0;
  auto operator<=>(const PoolShapeKey&) const = default;
};
PoolShapeKey PoolShapeKeyOf(PoolKind kind, int64_t batch, int64_t channels,
                            const ops::nn::WindowGeometry& g, int device);

// Whether cuDNN's 2-D pooling descriptor computes exactly the CPU's windows for input [batch,
// channels, in_h, in_w]: no dilation (the descriptor has none); a begin padding smaller than the
// window (every window then holds an input element, as the CPU requires for a defined maximum);
// padding that is the same at both ends of an axis, or differs only where the end padding changes
// no output (cuDNN pads both ends with the begin padding and floors: ceil_mode and uneven padding
// qualify only where they add no window); and, for a mean over the padded window, no window
// running past the end padding (the CPU divides by the window clipped there, cuDNN by the whole
// window). Sizes fit cuDNN's int.
bool CudnnDescribesPool(PoolKind kind, int64_t batch, int64_t channels,
                        const ops::nn::WindowGeometry& g);

// Whether cuDNN may run `direction` of a node of `kind` at all. Means: both directions.
// MaxPool: forward only, and only where no argmax is needed (`needs_argmax`: the node has the
// Indices output, or the session trains and backward follows). Backward stays on our kernel,
// which routes each output's gradient to the CPU's argmax: the first maximum in row-major window
// order, a NaN over numbers (window_geometry.h's MaxOfWindow). cuDNN documents of
// CUDNN_POOLING_MAX_DETERMINISTIC only that it is deterministic, not which of tied maxima gets the
// gradient (nor where a NaN sends it), and it finds the maximum again from X and Y rather than
// from our argmax; a tie is common (ReLU's zeros), so its routing could differ from the CPU's in
// any step. And where backward follows, the forward must give our backward its argmax anyway,
// which our forward kernel writes in the same pass as Y.
bool CudnnMayTake(PoolKind kind, PoolDirection direction, bool needs_argmax);

// What a shape and direction run, and the times that chose it (negative where not measured).
struct PoolChoice {
  PoolPath path = PoolPath::kOurs;
  float ours_ms = -1.0F;
  float cudnn_ms = -1.0F;
};

// The measured choice: cuDNN when it took the shape and ran faster than our kernel (ties keep
// ours, whose results are the CPU's bit for bit).
PoolPath FasterPoolPath(std::optional<float> cudnn_ms, float ours_ms);

// The choices made so far, per shape, direction and mode, shared by every pooling node of the
// process (ChoiceCache::Global). Thread-safe.
using PoolChoiceCache = ChoiceCache<PoolChoice, PoolShapeKey, PoolDirection, PoolPathMode>;

}  // namespace autodist::gpu::pool
