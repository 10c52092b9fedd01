// cudnn_build.h in a build whose CUDA toolkit has no cuDNN (gpu/CMakeLists.txt): Conv runs on
// im2col alone and pooling on its own kernels (no_cudnn_conv.cc, no_cudnn_pool.cc).
#include "gpu/ops/cudnn_build.h"

namespace autodist::gpu::detail {

bool CudnnInBuild() { return false; }

}  // namespace autodist::gpu::detail
