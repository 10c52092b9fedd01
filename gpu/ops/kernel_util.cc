#include "gpu/ops/kernel_util.h"

#include "gpu/memory/cuda_tensor_memory.h"
#include "gpu/ops/launch.h"
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

size_t RequireMovableElements(const std::string& node, const tensor::Tensor& tensor,
                              const char* what) {
  const size_t element = tensor::ElementSize(tensor.dtype());
  AD_CHECK(element == 4 || element == 8, kInvalidArgument,
           "{}: {} must have elements of 4 or 8 bytes on cuda, got {}", node, what,
           tensor::DTypeName(tensor.dtype()));
  return element;
}

tensor::Tensor SumToShape(const std::string& node, const tensor::Tensor& values,
                          const tensor::Shape& target, cudaStream_t stream) {
  if (values.shape() == target) return values;
  tensor::Tensor out(tensor::DType::kFloat32, target, values.device());
  LaunchSumToShape(values.device_data<float>(), out.device_data<float>(),
                   PlanSumToShape(values.shape(), target, node), stream);
  return out;
}

GemmMath GemmMathOf(ops::Precision precision) {
  switch (precision) {
    case ops::Precision::kTf32:
      return GemmMath::kTf32;
    case ops::Precision::kBf16:
      return GemmMath::kBf16;
    case ops::Precision::kFp32:
      break;
  }
  return GemmMath::kFp32;
}

}  // namespace autodist::gpu::detail
