// Internal: how a pooling kernel on CUDA picks its path for a shape and direction (pool_path.h's
// modes): pinned to our kernel, pinned to cuDNN (where it takes the shape), or measured: the first
// run of a shape times both on the GPU and the cache keeps the faster.
#pragma once

#include <functional>

#include "gpu/ops/cudnn_pool.h"
#include "gpu/ops/pool_path.h"

namespace autodist::gpu::detail {

// The path for `direction` of the pooling `call` describes, from pool::PoolChoiceCache::Global()
// after its first decision (only our kernel where CudnnMayTake says no: no decision is cached).
// `run_ours` queues the direction on our kernel into the call's output. Deciding runs cuDNN (and
// when measuring, our kernel) into that output and waits for the GPU, once per shape; the chosen
// path then computes it again. Throws what RunCudnnPool throws, and FailedPrecondition naming the
// node for the cudnn mode in a build without cuDNN.
pool::PoolChoice ChoosePoolPath(pool::PoolPathMode mode, pool::PoolDirection direction,
                                const CudnnPoolCall& call, const std::function<void()>& run_ours);

// Queues `direction` on the path `choice` names: cuDNN's, or `run_ours`. Throws Internal naming
// the node where cuDNN refuses a shape it took when the choice was made.
void RunPoolPath(const pool::PoolChoice& choice, pool::PoolDirection direction,
                 const CudnnPoolCall& call, const std::function<void()>& run_ours);

}  // namespace autodist::gpu::detail
