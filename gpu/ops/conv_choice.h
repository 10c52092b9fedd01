// Internal: how a Conv kernel on CUDA picks its path for a shape and direction (conv_path.h's
// modes): pinned to im2col, pinned to cuDNN (its fastest algorithm, or im2col where it has none),
// or measured: the first run of a shape times both on the GPU and the cache keeps the faster.
#pragma once

#include <functional>

#include "gpu/ops/conv_path.h"
#include "gpu/ops/cudnn_conv.h"

namespace autodist::gpu::detail {

// The path for `direction` of the convolution `call` describes, from conv::ConvChoiceCache::
// Global() after its first decision. `run_im2col` queues the direction on the im2col path (into
// the call's output), for the measurement; the measurement runs each candidate a few times into
// that output and waits for the GPU, once per shape. Throws what FindCudnnAlgorithm throws, and
// FailedPrecondition naming the node for the cudnn mode in a build without cuDNN.
conv::ConvChoice ChooseConvPath(conv::ConvPathMode mode, conv::ConvDirection direction,
                                const CudnnConvCall& call, const std::function<void()>& run_im2col);

}  // namespace autodist::gpu::detail
