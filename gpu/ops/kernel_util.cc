#include "gpu/ops/kernel_util.h"

#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"

namespace autodist::gpu::detail {

cudaStream_t StreamOf(const std::string& node, const tensor::Tensor& tensor) {
  AD_CHECK(tensor.device().kind == tensor::DeviceKind::kCuda, kInternal,
           "{}: the CUDA kernel got a tensor on {}", node, tensor::DeviceName(tensor.device()));
  return TensorStream(tensor.device().index);
}

void RequireFloat32(const std::string& node, const tensor::Tensor& tensor, const char* what) {
  AD_CHECK(tensor.dtype() == tensor::DType::kFloat32, kInvalidArgument,
           "{}: {} must be float32 on cuda, got {}", node, what, tensor::DTypeName(tensor.dtype()));
}

}  // namespace autodist::gpu::detail
