// 2-D pooling through cuDNN's legacy pooling API (cudnn_pool.h, cudnn_ops.h): descriptors made
// per call, the GPU's handle shared with Conv (cudnn_handle.h).
#include "gpu/ops/cudnn_pool.h"

#include <cudnn.h>

#include <mutex>

#include "gpu/ops/cudnn_handle.h"
#include "runtime/common/error.h"

namespace autodist::gpu::detail {
namespace {

using pool::PoolDirection;
using pool::PoolKind;

// The CPU's means map onto cuDNN's two average modes. The maximum takes the deterministic mode,
// though only its forward runs here (pool_path.h's CudnnMayTake), which picks no element.
cudnnPoolingMode_t ModeOf(PoolKind kind) {
  switch (kind) {
    case PoolKind::kAverageExcludingPadding:
      return CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    case PoolKind::kAverageIncludingPadding:
      return CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    case PoolKind::kMax:
      break;
  }
  return CUDNN_POOLING_MAX_DETERMINISTIC;
}

// The descriptors of one pooling run, freed with the object.
class Descriptors {
 public:
  explicit Descriptors(const CudnnPoolCall& call)
      : call_(call),
        x_(*call.node, "creating X's descriptor"),
        y_(*call.node, "creating Y's descriptor"),
        pool_(*call.node, "creating the pooling's descriptor") {
    const ops::nn::WindowGeometry& g = *call_.window;
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    DescribeNchwFloat(x(), call_.batch, call_.channels, g.in_h, g.in_w, *call_.node,
                      "describing X");
    DescribeNchwFloat(y(), call_.batch, call_.channels, g.out_h, g.out_w, *call_.node,
                      "describing Y");
    // NaN propagates: the CPU's maximum is NaN wherever a window holds one.
    Check(cudnnSetPooling2dDescriptor(pool(), ModeOf(call_.kind), CUDNN_PROPAGATE_NAN,
                                      i(g.kernel_h), i(g.kernel_w), i(g.pad_top), i(g.pad_left),
                                      i(g.stride_h), i(g.stride_w)),
          "describing the window");
  }

  // Whether cuDNN's output size for the window is ours (CudnnDescribesPool's rule says it is;
  // this is cuDNN's own word on it).
  bool OutputIsOurs() const {
    int n = 0;
    int c = 0;
    int h = 0;
    int w = 0;
    Check(cudnnGetPooling2dForwardOutputDim(pool(), x(), &n, &c, &h, &w), "sizing the output");
    const ops::nn::WindowGeometry& g = *call_.window;
    return n == call_.batch && c == call_.channels && h == g.out_h && w == g.out_w;
  }

  cudnnTensorDescriptor_t x() const { return x_.get(); }
  cudnnTensorDescriptor_t y() const { return y_.get(); }
  cudnnPoolingDescriptor_t pool() const { return pool_.get(); }

 private:
  void Check(cudnnStatus_t status, const char* what) const {
    CheckCudnn(status, *call_.node, what);
  }

  const CudnnPoolCall& call_;
  // Made in this order, destroyed in the reverse.
  CudnnTensorDescriptor x_;
  CudnnTensorDescriptor y_;
  CudnnPoolingDescriptor pool_;
};

}  // namespace

bool RunCudnnPool(PoolDirection direction, const CudnnPoolCall& call) {
  if (!pool::CudnnMayTake(call.kind, direction, call.needs_argmax) ||
      !pool::CudnnDescribesPool(call.kind, call.batch, call.channels, *call.window)) {
    return false;
  }
  CudnnHandle& handle = CudnnHandleOn(call.device, *call.node);
  const Descriptors d(call);
  if (!d.OutputIsOurs()) return false;
  const float one = 1.0F;
  const float zero = 0.0F;
  const std::lock_guard lock(handle.mutex);
  CheckCudnn(cudnnSetStream(handle.handle, call.stream), *call.node, "setting the stream");
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  if (direction == PoolDirection::kForward) {
    status =
        cudnnPoolingForward(handle.handle, d.pool(), &one, d.x(), call.x, &zero, d.y(), call.y);
  } else {
    // A mean's gradient needs neither X nor Y, but the call takes both: dY stands for Y and dX for
    // X (same shapes; cuDNN's average modes read neither).
    status = cudnnPoolingBackward(handle.handle, d.pool(), &one, d.y(), call.dy, d.y(), call.dy,
                                  d.x(), call.dx, &zero, d.x(), call.dx);
  }
  if (CudnnRefused(status)) return false;
  CheckCudnn(status, *call.node,
             direction == PoolDirection::kForward ? "pooling" : "computing the pooling's gradient");
  return true;
}

}  // namespace autodist::gpu::detail
