// Internal: whether this build links cuDNN. Conv's and pooling's cuDNN paths ask it before they
// take a shape, so a build without cuDNN (gpu/CMakeLists.txt: no cudnn.h or libcudnn beside the
// CUDA toolkit) compiles the same kernels and runs them on their own paths.
#pragma once

namespace autodist::gpu::detail {

// Defined in cudnn_handle.cc where the build has cuDNN, in no_cudnn.cc where it has not.
bool CudnnInBuild();

}  // namespace autodist::gpu::detail
