#include "gpu/ops/pool_choice.h"

#include "gpu/ops/path_timing.h"
#include "runtime/common/error.h"

namespace autodist::gpu::detail {
namespace {

using pool::PoolChoice;
using pool::PoolPath;
using pool::PoolPathMode;

PoolChoice PinnedCudnn(pool::PoolDirection direction, const CudnnPoolCall& call) {
  PoolChoice choice;
  if (RunCudnnPool(direction, call)) choice.path = PoolPath::kCudnn;
  return choice;
}

PoolChoice Measure(pool::PoolDirection direction, const CudnnPoolCall& call,
                   const std::function<void()>& run_ours) {
  PoolChoice choice;
  // cuDNN first, once: whether it takes the shape at all (a shape it does not take is ours,
  // untimed), and a warm-up that loads its kernels before MeanRunMs's own.
  if (!RunCudnnPool(direction, call)) return choice;
  choice.ours_ms = MeanRunMs(call.stream, run_ours);
  choice.cudnn_ms = MeanRunMs(call.stream, [&] { RunCudnnPool(direction, call); });
  choice.path = pool::FasterPoolPath(choice.cudnn_ms, choice.ours_ms);
  return choice;
}

}  // namespace

PoolChoice ChoosePoolPath(PoolPathMode mode, pool::PoolDirection direction,
                          const CudnnPoolCall& call, const std::function<void()>& run_ours) {
  if (mode == PoolPathMode::kOurs) return PoolChoice{};
  AD_CHECK(mode != PoolPathMode::kCudnn || CudnnInBuild(), kFailedPrecondition,
           "{}: {}=cudnn, but this build has no cuDNN (cudnn.h and libcudnn beside the CUDA "
           "toolkit); unset it or choose ours",
           *call.node, pool::kPoolPathEnv);
  if (!pool::CudnnMayTake(call.kind, direction, call.needs_argmax)) return PoolChoice{};
  const pool::PoolShapeKey key =
      pool::PoolShapeKeyOf(call.kind, call.batch, call.channels, *call.window, call.device);
  return pool::PoolChoiceCache::Global().ChooseOnce(key, direction, mode, [&] {
    return mode == PoolPathMode::kCudnn ? PinnedCudnn(direction, call)
                                        : Measure(direction, call, run_ours);
  });
}

void RunPoolPath(const PoolChoice& choice, pool::PoolDirection direction, const CudnnPoolCall& call,
                 const std::function<void()>& run_ours) {
  if (choice.path == PoolPath::kOurs) {
    run_ours();
    return;
  }
  AD_CHECK(RunCudnnPool(direction, call), kInternal,
           "{}: cuDNN refused the pooling's {} it took when its path was chosen", *call.node,
           pool::PoolDirectionName(direction));
}

}  // namespace autodist::gpu::detail
