#include "gpu/device/cuda_error.h"

#include "runtime/common/error.h"

namespace autodist::gpu {
namespace {

ErrorCode CodeOf(cudaError_t status) {
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorNoKernelImageForDevice:
      return ErrorCode::kFailedPrecondition;
    case cudaErrorMemoryAllocation:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

}  // namespace

void CheckCuda(cudaError_t status, std::string_view what) {
  if (status == cudaSuccess) return;
  // Clear the error where CUDA keeps it, so that the next call does not report it again (a
  // sticky error such as a fault in a kernel stays: the context is lost).
  cudaGetLastError();
  Fail(CodeOf(status), "{}: {}: {}", what, cudaGetErrorName(status), cudaGetErrorString(status));
}

}  // namespace autodist::gpu
