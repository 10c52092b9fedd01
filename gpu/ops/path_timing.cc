#include "gpu/ops/path_timing.h"

#include "gpu/device/stream.h"

namespace autodist::gpu::detail {

float MeanRunMs(cudaStream_t stream, const std::function<void()>& run) {
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

}  // namespace autodist::gpu::detail
