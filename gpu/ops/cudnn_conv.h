// Internal: 2-D Conv through cuDNN, one of the two paths conv_kernel.cc chooses between
// (conv_path.h). Built from cudnn_conv.cc where the CUDA toolkit has cuDNN, and from
// no_cudnn_conv.cc where it has not (that build has the im2col path only). The interface names no
// cuDNN type, so the kernel compiles the same either way.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "gpu/blas/matmul.h"
#include "gpu/ops/conv_path.h"
#include "gpu/ops/cudnn_build.h"
#include "runtime/ops/nn/conv_geometry.h"

namespace autodist::gpu::detail {

// The most workspace a cuDNN algorithm may take: its search skips those that need more. Enough
// for the FFT and Winograd kernels of a small network's layers, and a bound on what a step holds
// beyond its tensors.
inline constexpr size_t kCudnnWorkspaceLimit = size_t{64} << 20;

// The tensors of one convolution on GPU `device` (all float32, NCHW, on the device): what a
// direction reads and writes. Forward reads x, w (and bias, null for none) and writes y;
// backward data reads w, dy and writes dx; backward filter reads x, dy and writes dw.
struct CudnnConvCall {
  const ops::nn::ConvGeometry* shape = nullptr;
  GemmMath math = GemmMath::kFp32;
  int device = 0;
  cudaStream_t stream = nullptr;
  const std::string* node = nullptr;  // named in every error
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  const float* dy = nullptr;
  float* y = nullptr;
  float* dx = nullptr;
  float* dw = nullptr;
};

// cuDNN's fastest algorithm for `direction`, timed by cuDNN itself on the call's tensors
// (cudnnFind*AlgorithmEx: it writes the direction's output) within kCudnnWorkspaceLimit, among
// those that are deterministic and compute as `math` allows: FMA only for fp32, tensor cores
// (TF32) also for tf32 and bf16. Nullopt when there is none: cuDNN refuses the shape
// (CUDNN_STATUS_NOT_SUPPORTED), its descriptor cannot describe it (conv_path.h's
// CudnnDescribes), or the build has no cuDNN. Throws Internal naming the node and cuDNN's status
// for any other failure (kUnavailable out of memory).
std::optional<conv::CudnnAlgorithm> FindCudnnAlgorithm(conv::ConvDirection direction,
                                                       const CudnnConvCall& call);

// Queues `algorithm` for `direction` on the call's stream; forward adds the bias. Throws as
// FindCudnnAlgorithm does, also for a refusal.
void RunCudnnConv(conv::ConvDirection direction, const conv::CudnnAlgorithm& algorithm,
                  const CudnnConvCall& call);

}  // namespace autodist::gpu::detail
