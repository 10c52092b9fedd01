// cudnn_conv.h in a build whose CUDA toolkit has no cuDNN (gpu/CMakeLists.txt): Conv runs on
// im2col alone. The kernel asks FindCudnnAlgorithm before it runs cuDNN, so RunCudnnConv is never
// reached here; were it, the build and the kernel disagree, a bug.
#include "gpu/ops/cudnn_conv.h"
#include "runtime/common/error.h"

namespace autodist::gpu::detail {

std::optional<conv::CudnnAlgorithm> FindCudnnAlgorithm(conv::ConvDirection /*direction*/,
                                                       const CudnnConvCall& /*call*/) {
  return std::nullopt;
}

void RunCudnnConv(conv::ConvDirection direction, const conv::CudnnAlgorithm& /*algorithm*/,
                  const CudnnConvCall& call) {
  Fail(ErrorCode::kInternal, "{}: Conv {} through cuDNN in a build without cuDNN", *call.node,
       conv::ConvDirectionName(direction));
}

}  // namespace autodist::gpu::detail
