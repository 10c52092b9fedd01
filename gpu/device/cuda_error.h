// CUDA runtime errors in the codebase's one style (docs/errors.md): a failed call becomes an
// autodist::Error that names what we were doing and what CUDA said.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

namespace autodist::gpu {

// Throws Error when `status` is not cudaSuccess: "<what>: <CUDA's name>: <CUDA's text>". A
// missing driver or device is kFailedPrecondition, running out of device memory kUnavailable,
// anything else kInternal.
void CheckCuda(cudaError_t status, std::string_view what);

}  // namespace autodist::gpu
