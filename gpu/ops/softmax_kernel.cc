// Softmax and LogSoftmax on CUDA (opsets 1..17): the CPU kernels' semantics and axis rules
// (runtime/ops/activation/softmax.cc, softmax_layout.h), float32. The gradient reads only the
// output, as on the CPU.
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using tensor::DType;
using tensor::Tensor;

template <bool kLog>
class CudaSoftmaxKernel final : public ops::OpKernel {
 public:
  explicit CudaSoftmaxKernel(const ops::NodeInfo& node)
      : OpKernel(node), axis_(ops::ParseSoftmaxAxis(node)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, x);
    detail::RequireFloat32(node, x, "the input");
    const ops::SoftmaxLayout layout = ops::ResolveSoftmax(axis_, x.shape(), node);
    Tensor y(DType::kFloat32, x.shape(), x.device());
    detail::LaunchSoftmax<kLog>(x.device_data<float>(), y.device_data<float>(), layout, stream);
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    const Tensor& y = ctx.output(0);
    cudaStream_t stream = detail::StreamOf(node, y);
    const ops::SoftmaxLayout layout = ops::ResolveSoftmax(axis_, y.shape(), node);
    Tensor dx(DType::kFloat32, y.shape(), y.device());
    detail::LaunchSoftmaxGrad<kLog>(dy->device_data<float>(), y.device_data<float>(),
                                    dx.device_data<float>(), layout, stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }

 private:
  ops::SoftmaxAxis axis_;
};

using CudaSoftmax = CudaSoftmaxKernel<false>;
using CudaLogSoftmax = CudaSoftmaxKernel<true>;
AUTODIST_REGISTER_DEVICE_KERNEL(Softmax, 1, 17, CudaSoftmax, kCuda);
AUTODIST_REGISTER_DEVICE_KERNEL(LogSoftmax, 1, 17, CudaLogSoftmax, kCuda);

}  // namespace
}  // namespace autodist::gpu
