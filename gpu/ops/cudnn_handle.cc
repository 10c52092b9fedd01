#include "gpu/ops/cudnn_handle.h"

#include <fmt/format.h>

#include <map>
#include <memory>

#include "gpu/device/cuda_error.h"
#include "gpu/ops/cudnn_build.h"
#include "runtime/common/error.h"

namespace autodist::gpu::detail {

bool CudnnInBuild() { return true; }

CudnnHandle& CudnnHandleOn(int device, const std::string& node) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, std::unique_ptr<CudnnHandle>>();
  const std::lock_guard lock(mutex);
  auto& entry = (*handles)[device];
  if (entry == nullptr) {
    const std::string what = fmt::format("{}: cuDNN's handle on GPU {}", node, device);
    int current = 0;
    CheckCuda(cudaGetDevice(&current), what);
    CheckCuda(cudaSetDevice(device), what);
    auto made = std::make_unique<CudnnHandle>();
    const cudnnStatus_t status = cudnnCreate(&made->handle);
    CheckCuda(cudaSetDevice(current), what);
    CheckCudnn(status, node, "creating a handle");
    entry = std::move(made);
  }
  return *entry;
}

bool CudnnRefused(cudnnStatus_t status) {
  return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED;
}

void CheckCudnn(cudnnStatus_t status, const std::string& node, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const ErrorCode code = status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                             ? ErrorCode::kUnavailable
                             : ErrorCode::kInternal;
  Fail(code, "{}: cuDNN {}: {} ({})", node, what, cudnnGetErrorString(status),
       static_cast<int>(status));
}

void DescribeNchwFloat(cudnnTensorDescriptor_t tensor, int64_t n, int64_t c, int64_t h, int64_t w,
                       const std::string& node, const char* what) {
  CheckCudnn(
      cudnnSetTensor4dDescriptor(tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n),
                                 static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)),
      node, what);
}

}  // namespace autodist::gpu::detail
