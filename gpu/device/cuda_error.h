// CUDA runtime errors in the codebase's one style (docs/errors.md): a failed call becomes an
// autodist::Error that names what we were doing and what CUDA said.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>
#include <type_traits>

namespace autodist::gpu {

// Throws Error when `status` is not cudaSuccess: "<what>: <CUDA's name>: <CUDA's text>". A
// missing driver or device is kFailedPrecondition, running out of device memory kUnavailable,
// anything else kInternal.
void CheckCuda(cudaError_t status, std::string_view what);

// The same, with the text `describe()` returns, built only when the call failed: for calls made
// per group or per push, whose description names them (a formatted string).
template <typename Describe, typename = std::enable_if_t<std::is_invocable_v<Describe&>>>
void CheckCuda(cudaError_t status, Describe&& describe) {
  if (status != cudaSuccess) CheckCuda(status, std::string_view(describe()));
}

}  // namespace autodist::gpu
