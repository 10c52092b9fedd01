// cudnn_pool.h in a build whose CUDA toolkit has no cuDNN (gpu/CMakeLists.txt): pooling runs on
// our kernels alone.
#include "gpu/ops/cudnn_pool.h"

namespace autodist::gpu::detail {

bool RunCudnnPool(pool::PoolDirection /*direction*/, const CudnnPoolCall& /*call*/) {
  return false;
}

}  // namespace autodist::gpu::detail
