#include "gpu/ops/conv_choice.h"

#include <optional>

#include "gpu/ops/path_timing.h"
#include "runtime/common/error.h"

namespace autodist::gpu::detail {
namespace {

using conv::ConvChoice;
using conv::ConvPath;
using conv::ConvPathMode;

ConvChoice PinnedCudnn(conv::ConvDirection direction, const CudnnConvCall& call) {
  ConvChoice choice;
  if (const std::optional<conv::CudnnAlgorithm> found = FindCudnnAlgorithm(direction, call)) {
    choice.path = ConvPath::kCudnn;
    choice.cudnn = *found;
    choice.cudnn_ms = found->ms;
  }
  return choice;
}

ConvChoice Measure(conv::ConvDirection direction, const CudnnConvCall& call,
                   const std::function<void()>& run_im2col) {
  ConvChoice choice;
  const std::optional<conv::CudnnAlgorithm> found = FindCudnnAlgorithm(direction, call);
  choice.im2col_ms = MeanRunMs(call.stream, run_im2col);
  std::optional<float> cudnn_ms;
  if (found.has_value()) {
    choice.cudnn = *found;
    choice.cudnn_ms = MeanRunMs(call.stream, [&] { RunCudnnConv(direction, *found, call); });
    cudnn_ms = choice.cudnn_ms;
  }
  choice.path = conv::FasterPath(cudnn_ms, choice.im2col_ms);
  return choice;
}

}  // namespace

ConvChoice ChooseConvPath(ConvPathMode mode, conv::ConvDirection direction,
                          const CudnnConvCall& call, const std::function<void()>& run_im2col) {
  if (mode == ConvPathMode::kIm2col) return ConvChoice{};
  AD_CHECK(mode != ConvPathMode::kCudnn || CudnnInBuild(), kFailedPrecondition,
           "{}: {}=cudnn, but this build has no cuDNN (cudnn.h and libcudnn beside the CUDA "
           "toolkit); unset it or choose im2col",
           *call.node, conv::kConvPathEnv);
  const conv::ConvShapeKey key = conv::ConvShapeKeyOf(*call.shape, call.math, call.device);
  return conv::ConvChoiceCache::Global().ChooseOnce(key, direction, mode, [&] {
    return mode == ConvPathMode::kCudnn ? PinnedCudnn(direction, call)
                                        : Measure(direction, call, run_im2col);
  });
}

}  // namespace autodist::gpu::detail
