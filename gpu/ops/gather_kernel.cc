// Gather on CUDA (opsets 1..17): the CPU kernel's semantics (runtime/ops/tensor/gather.cc): any
// axis, indices of any rank, negative ones counted from the end and checked against the axis,
// data of 4- or 8-byte elements. The indices are read on the host (checked, wrapped) and put on
// the GPU for the copy. The gradient is row-sparse on axis 0 (the rows named, ascending, on the
// device) and dense on the others, as on the CPU: each named row is the sum of its occurrences
// in the order they appear, as the CPU sums them (gather.cu), so the same bits.
#include <memory>
#include <string>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/gather_plan.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::gpu {
namespace {

using tensor::Shape;
using tensor::Tensor;

struct CudaGatherState final : ops::KernelState {
  ops::GatherPlan plan;
};

class CudaGatherKernel final : public ops::OpKernel {
 public:
  explicit CudaGatherKernel(const ops::NodeInfo& node)
      : OpKernel(node), axis_(node.GetInt("axis", 0)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& data = ctx.input(0);
    cudaStream_t stream = detail::StreamOf(node, data);
    const size_t element = detail::RequireMovableElements(node, data, "the data");
    auto state = std::make_unique<CudaGatherState>();
    state->plan = ops::PlanGather(data.shape(), ctx.input(1), axis_, node);
    const ops::GatherPlan& plan = state->plan;
    Tensor y(data.dtype(), plan.output_shape, data.device());
    const auto n = static_cast<int64_t>(plan.indices.size());
    if (y.numel() > 0) {
      const Tensor wrapped = Tensor::FromVector<int64_t>({n}, plan.indices).To(data.device());
      detail::LaunchGatherRows(data.raw(), y.raw(), wrapped.device_data<int64_t>(), plan.outer, n,
                               plan.dim, plan.inner, element, stream);
      // `wrapped` goes at the end of this scope: a GPU's tensors are allocated, used and freed in
      // the order of one stream (cuda_tensor_memory.h), so its memory outlives the copy.
    }
    ctx.save_state(std::move(state));
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const std::string& node = description();
    cudaStream_t stream = detail::StreamOf(node, *dy);
    detail::RequireFloat32(node, *dy, "the output gradient");
    const auto* state = &ops::SavedState<CudaGatherState>(ctx);
    const ops::GatherPlan& plan = state->plan;
    const tensor::RowGroups groups = tensor::GroupByRow(plan.indices);
    std::vector<int64_t> packed = groups.rows;
    packed.insert(packed.end(), groups.starts.begin(), groups.starts.end());
    packed.insert(packed.end(), groups.order.begin(), groups.order.end());
    const auto count = static_cast<int64_t>(packed.size());
    const Tensor lists = Tensor::FromVector<int64_t>({count}, packed).To(dy->device());
    const auto* base = lists.device_data<int64_t>();
    detail::GatherGradPlan grad;
    grad.unique = static_cast<int64_t>(groups.rows.size());
    grad.rows = base;
    grad.starts = base + grad.unique;
    grad.positions = base + 2 * grad.unique + 1;
    grad.outer = plan.outer;
    grad.n = static_cast<int64_t>(plan.indices.size());
    grad.dim = plan.dim;
    grad.inner = plan.inner;
    if (plan.axis == 0) {
      // An embedding's gradient: only the rows read, as tensor::CoalesceRows makes it on the CPU.
      grad.compact = true;
      tensor::Shape values_shape = plan.data_shape;
      values_shape[0] = grad.unique;
      Tensor values(tensor::DType::kFloat32, values_shape, dy->device());
      detail::LaunchGatherGrad(dy->device_data<float>(), values.device_data<float>(), grad, stream);
      Tensor rows = Tensor::FromVector<int64_t>({grad.unique}, groups.rows).To(dy->device());
      ctx.set_input_sparse_grad(
          0, tensor::SparseGradient{std::move(rows), std::move(values), plan.data_shape});
      return;
    }
    Tensor dx(tensor::DType::kFloat32, plan.data_shape, dy->device());
    CheckCuda(cudaMemsetAsync(dx.raw(), 0, dx.nbytes(), stream), node + ": zeroing the gradient");
    detail::LaunchGatherGrad(dy->device_data<float>(), dx.device_data<float>(), grad, stream);
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  int64_t axis_;
};

AUTODIST_REGISTER_DEVICE_KERNEL(Gather, 1, 17, CudaGatherKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
