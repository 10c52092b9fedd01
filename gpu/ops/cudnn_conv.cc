// 2-D Conv through cuDNN's convolution API (cudnn_conv.h): descriptors made per call (a few
// microseconds against a convolution's tens), one handle per GPU (cudnn_handle.h), algorithms
// chosen by cuDNN's own timing search. ONNX's Conv is a cross-correlation, cuDNN's
// CUDNN_CROSS_CORRELATION mode.
#include "gpu/ops/cudnn_conv.h"

#include <cudnn.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <string>

#include "gpu/ops/cudnn_handle.h"
#include "runtime/common/error.h"
#include "runtime/tensor/tensor.h"

namespace autodist::gpu::detail {
namespace {

using conv::ConvDirection;
using conv::CudnnAlgorithm;

// The descriptors of one convolution, freed with the object.
class Descriptors {
 public:
  explicit Descriptors(const CudnnConvCall& call)
      : call_(call),
        x_(*call.node, "creating X's descriptor"),
        y_(*call.node, "creating Y's descriptor"),
        w_(*call.node, "creating W's descriptor"),
        conv_(*call.node, "creating the convolution's descriptor") {
    const ops::nn::ConvGeometry& s = *call_.shape;
    const ops::nn::WindowGeometry& g = s.window;
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    DescribeNchwFloat(x(), s.batch, s.in_channels, g.in_h, g.in_w, *call_.node, "describing X");
    DescribeNchwFloat(y(), s.batch, s.out_channels, g.out_h, g.out_w, *call_.node, "describing Y");
    Check(cudnnSetFilter4dDescriptor(w(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(s.out_channels),
                                     i(s.group_in), i(g.kernel_h), i(g.kernel_w)),
          "describing W");
    Check(cudnnSetConvolution2dDescriptor(conv(), i(g.pad_top), i(g.pad_left), i(g.stride_h),
                                          i(g.stride_w), i(g.dilation_h), i(g.dilation_w),
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "describing the convolution");
    Check(cudnnSetConvolutionGroupCount(conv(), i(s.group)), "setting the group count");
  }

  void SetMath(cudnnMathType_t math) {
    Check(cudnnSetConvolutionMathType(conv(), math), "setting the math type");
  }

  cudnnTensorDescriptor_t x() const { return x_.get(); }
  cudnnTensorDescriptor_t y() const { return y_.get(); }
  cudnnFilterDescriptor_t w() const { return w_.get(); }
  cudnnConvolutionDescriptor_t conv() const { return conv_.get(); }

 private:
  void Check(cudnnStatus_t status, const char* what) const {
    CheckCudnn(status, *call_.node, what);
  }

  const CudnnConvCall& call_;
  // Made in this order, destroyed in the reverse.
  CudnnTensorDescriptor x_;
  CudnnTensorDescriptor y_;
  CudnnFilterDescriptor w_;
  CudnnConvolutionDescriptor conv_;
};

// The math type the search runs with: FMA kernels only for fp32 (the CPU's arithmetic: cuDNN's
// default math would allow TF32 on Hopper), tensor cores for tf32 and bf16. cuDNN has no fp32
// convolution with bf16 products, so a bf16 session gets TF32 here, which rounds less.
cudnnMathType_t SearchMath(GemmMath math) {
  return math == GemmMath::kFp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

// Whether a result the search reported may run for `math`: deterministic (the same bits every
// step, as every other kernel of this backend), and computing as the session allows: never
// converting the operands to fp16, and for fp32 nothing but FMA.
template <typename Perf>
bool Acceptable(const Perf& perf, GemmMath math) {
  if (perf.status != CUDNN_STATUS_SUCCESS || perf.determinism != CUDNN_DETERMINISTIC) return false;
  if (perf.memory > kCudnnWorkspaceLimit) return false;
  if (math == GemmMath::kFp32) return perf.mathType == CUDNN_FMA_MATH;
  return perf.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// The fastest acceptable of `found` results (cuDNN sorts them by time, fastest first).
template <typename Perf>
std::optional<CudnnAlgorithm> Fastest(const Perf* results, int found, GemmMath math) {
  for (int r = 0; r < found; ++r) {
    const Perf& perf = results[r];
    if (!Acceptable(perf, math)) continue;
    return CudnnAlgorithm{.algorithm = static_cast<int>(perf.algo),
                          .math_type = static_cast<int>(perf.mathType),
                          .workspace_bytes = perf.memory,
                          .ms = perf.time};
  }
  return std::nullopt;
}

// Device scratch of `bytes` from the tensor buffers' cache (so a step's workspace is reused by
// the next), on the tensor stream the convolution runs on.
tensor::Tensor Workspace(const CudnnConvCall& call, size_t bytes) {
  const auto floats = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
  return tensor::Tensor(tensor::DType::kFloat32, {std::max<int64_t>(1, floats)},
                        tensor::Device::Cuda(call.device));
}

void* WorkspaceData(tensor::Tensor& workspace, size_t bytes) {
  return bytes == 0 ? nullptr : workspace.device_data<float>();
}

// The workspace the search gets: what the most demanding algorithm within kCudnnWorkspaceLimit
// needs (one needing more is skipped), not the limit itself, since the search runs inside a step
// and its workspace adds to the step's peak memory.
size_t SearchWorkspace(ConvDirection direction, cudnnHandle_t handle, const Descriptors& d) {
  size_t most = 0;
  const auto consider = [&](cudnnStatus_t status, size_t bytes) {
    if (status == CUDNN_STATUS_SUCCESS && bytes <= kCudnnWorkspaceLimit) {
      most = std::max(most, bytes);
    }
  };
  size_t bytes = 0;
  switch (direction) {
    case ConvDirection::kForward:
      for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
        consider(cudnnGetConvolutionForwardWorkspaceSize(handle, d.x(), d.w(), d.conv(), d.y(),
                                                         static_cast<cudnnConvolutionFwdAlgo_t>(a),
                                                         &bytes),
                 bytes);
      }
      break;
    case ConvDirection::kBackwardData:
      for (int a = 0; a < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; ++a) {
        consider(cudnnGetConvolutionBackwardDataWorkspaceSize(
                     handle, d.w(), d.y(), d.conv(), d.x(),
                     static_cast<cudnnConvolutionBwdDataAlgo_t>(a), &bytes),
                 bytes);
      }
      break;
    case ConvDirection::kBackwardFilter:
      for (int a = 0; a < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; ++a) {
        consider(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                     handle, d.x(), d.y(), d.conv(), d.w(),
                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(a), &bytes),
                 bytes);
      }
      break;
  }
  return most;
}

}  // namespace

std::optional<CudnnAlgorithm> FindCudnnAlgorithm(ConvDirection direction,
                                                 const CudnnConvCall& call) {
  if (!conv::CudnnDescribes(*call.shape)) return std::nullopt;
  CudnnHandle& handle = CudnnHandleOn(call.device, *call.node);
  Descriptors d(call);
  d.SetMath(SearchMath(call.math));
  const std::lock_guard lock(handle.mutex);
  CheckCudnn(cudnnSetStream(handle.handle, call.stream), *call.node, "setting the stream");
  const size_t space_bytes = SearchWorkspace(direction, handle.handle, d);
  tensor::Tensor workspace = Workspace(call, space_bytes);
  void* space = WorkspaceData(workspace, space_bytes);
  int found = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  std::optional<CudnnAlgorithm> best;
  switch (direction) {
    case ConvDirection::kForward: {
      std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> results{};
      status = cudnnFindConvolutionForwardAlgorithmEx(
          handle.handle, d.x(), call.x, d.w(), call.w, d.conv(), d.y(), call.y,
          static_cast<int>(results.size()), &found, results.data(), space, space_bytes);
      if (status == CUDNN_STATUS_SUCCESS) best = Fastest(results.data(), found, call.math);
      break;
    }
    case ConvDirection::kBackwardData: {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>
          results{};
      status = cudnnFindConvolutionBackwardDataAlgorithmEx(
          handle.handle, d.w(), call.w, d.y(), call.dy, d.conv(), d.x(), call.dx,
          static_cast<int>(results.size()), &found, results.data(), space, space_bytes);
      if (status == CUDNN_STATUS_SUCCESS) best = Fastest(results.data(), found, call.math);
      break;
    }
    case ConvDirection::kBackwardFilter: {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>
          results{};
      status = cudnnFindConvolutionBackwardFilterAlgorithmEx(
          handle.handle, d.x(), call.x, d.y(), call.dy, d.conv(), d.w(), call.dw,
          static_cast<int>(results.size()), &found, results.data(), space, space_bytes);
      if (status == CUDNN_STATUS_SUCCESS) best = Fastest(results.data(), found, call.math);
      break;
    }
  }
  // A shape cuDNN refuses runs on im2col (the caller's fallback); any other failure is ours.
  if (CudnnRefused(status)) return std::nullopt;
  CheckCudnn(status, *call.node, "searching for an algorithm");
  return best;
}

void RunCudnnConv(ConvDirection direction, const CudnnAlgorithm& algorithm,
                  const CudnnConvCall& call) {
  CudnnHandle& handle = CudnnHandleOn(call.device, *call.node);
  Descriptors d(call);
  d.SetMath(static_cast<cudnnMathType_t>(algorithm.math_type));
  tensor::Tensor workspace = Workspace(call, algorithm.workspace_bytes);
  void* space = WorkspaceData(workspace, algorithm.workspace_bytes);
  const float one = 1.0F;
  const float zero = 0.0F;
  const std::lock_guard lock(handle.mutex);
  CheckCudnn(cudnnSetStream(handle.handle, call.stream), *call.node, "setting the stream");
  switch (direction) {
    case ConvDirection::kForward: {
      CheckCudnn(
          cudnnConvolutionForward(handle.handle, &one, d.x(), call.x, d.w(), call.w, d.conv(),
                                  static_cast<cudnnConvolutionFwdAlgo_t>(algorithm.algorithm),
                                  space, algorithm.workspace_bytes, &zero, d.y(), call.y),
          *call.node, "running the convolution");
      if (call.bias != nullptr) {
        const CudnnTensorDescriptor bias(*call.node, "creating B's descriptor");
        DescribeNchwFloat(bias.get(), 1, call.shape->out_channels, 1, 1, *call.node,
                          "adding the bias");
        CheckCudnn(cudnnAddTensor(handle.handle, &one, bias.get(), call.bias, &one, d.y(), call.y),
                   *call.node, "adding the bias");
      }
      break;
    }
    case ConvDirection::kBackwardData:
      CheckCudnn(cudnnConvolutionBackwardData(
                     handle.handle, &one, d.w(), call.w, d.y(), call.dy, d.conv(),
                     static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm.algorithm), space,
                     algorithm.workspace_bytes, &zero, d.x(), call.dx),
                 *call.node, "computing the input's gradient");
      break;
    case ConvDirection::kBackwardFilter:
      CheckCudnn(cudnnConvolutionBackwardFilter(
                     handle.handle, &one, d.x(), call.x, d.y(), call.dy, d.conv(),
                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm.algorithm), space,
                     algorithm.workspace_bytes, &zero, d.w(), call.dw),
                 *call.node, "computing the weight's gradient");
      break;
  }
}

}  // namespace autodist::gpu::detail
