// Internal: what every cuDNN call of the op kernels shares (Conv's cudnn_conv.cc, pooling's
// cudnn_pool.cc): one cuDNN handle per GPU, cuDNN's statuses as autodist errors, and descriptors
// that free themselves. Built only where the build has cuDNN (gpu/CMakeLists.txt).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace autodist::gpu::detail {

// A GPU's handle. A handle has one stream at a time, so a call holds `mutex` from setting the
// stream until its work is queued.
struct CudnnHandle {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
};

// The handle of GPU `device`, made on that GPU the first time it is asked for and never destroyed
// (kernels of static sessions may still run while statics are torn down). Throws as CheckCuda
// does (FailedPrecondition without a usable driver), naming `node` and the GPU.
CudnnHandle& CudnnHandleOn(int device, const std::string& node);

// Whether cuDNN refused what it was asked (CUDNN_STATUS_NOT_SUPPORTED and its sub-codes): the
// callers run the shape on their own kernels then.
bool CudnnRefused(cudnnStatus_t status);

// Throws for any status but success, naming `node` and `what` was being done: kUnavailable out of
// device memory (as CheckCuda makes it), kInternal otherwise.
void CheckCudnn(cudnnStatus_t status, const std::string& node, const char* what);

// Describes `tensor` as dense float32 of n x c x h x w in NCHW order (the layout every cuDNN
// call of ours takes); throws as CheckCudnn, naming `node` and `what`.
void DescribeNchwFloat(cudnnTensorDescriptor_t tensor, int64_t n, int64_t c, int64_t h, int64_t w,
                       const std::string& node, const char* what);

// A cuDNN descriptor, made with the object and destroyed with it. An object holding several as
// members frees those already made when a later one, or a constructor's describing, throws: C++
// destroys the members a throwing constructor had built.
template <typename Descriptor, cudnnStatus_t (*Create)(Descriptor*),
          cudnnStatus_t (*Destroy)(Descriptor)>
class CudnnDescriptor {
 public:
  // Throws as CheckCudnn, naming `node` and `what`, when cuDNN cannot make it.
  CudnnDescriptor(const std::string& node, const char* what) {
    CheckCudnn(Create(&descriptor_), node, what);
  }
  ~CudnnDescriptor() {
    if (descriptor_ != nullptr) Destroy(descriptor_);
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  Descriptor get() const { return descriptor_; }

 private:
  Descriptor descriptor_ = nullptr;
};

using CudnnTensorDescriptor = CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                              cudnnDestroyTensorDescriptor>;
using CudnnFilterDescriptor = CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                              cudnnDestroyFilterDescriptor>;
using CudnnConvolutionDescriptor =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                    cudnnDestroyConvolutionDescriptor>;
using CudnnPoolingDescriptor =
    CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                    cudnnDestroyPoolingDescriptor>;

}  // namespace autodist::gpu::detail
