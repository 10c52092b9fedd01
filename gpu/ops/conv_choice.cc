#include "gpu/ops/conv_choice.h"

#include <optional>

#include "gpu/device/stream.h"
#include "runtime/common/error.h"

namespace autodist::gpu::detail {
namespace {

using conv::ConvChoice;
using conv::ConvPath;
using conv::ConvPathMode;

// Milliseconds per run of `run` on `stream`, over a few runs after one that warms it up (the
// first im2col product of a shape times cuBLASLt's candidates; the first cuDNN call may load
// kernels).
float TimeRuns(cudaStream_t stream, const std::function<void()>& run) {
  constexpr int kRuns = 3;
  run();
  Event start(/*timing=*/true);
  Event stop(/*timing=*/true);
  start.Record(stream);
  for (int i = 0; i < kRuns; ++i) run();
  stop.Record(stream);
  stop.Synchronize();
  return stop.ElapsedMsSince(start) / kRuns;
}

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
  choice.im2col_ms = TimeRuns(call.stream, run_im2col);
  std::optional<float> cudnn_ms;
  if (found.has_value()) {
    choice.cudnn = *found;
    choice.cudnn_ms = TimeRuns(call.stream, [&] { RunCudnnConv(direction, *found, call); });
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
