// Gather on CUDA (opsets 1..17): the CPU kernel's semantics (runtime/ops/tensor/gather.cc): any
// axis, indices of any rank, negative ones counted from the end and checked against the axis,
// data of 4- or 8-byte elements. The indices are read on the host (checked, wrapped) and put on
// the GPU for the copy. The gradient is dense on every axis, a device having no sparse gradients
// (runtime/exec: the executor refuses them off the CPU): each named row is the sum of its
// occurrences in the order they appear, as the CPU sums them (gather.cu).
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::gpu {
namespace {

using tensor::Shape;
using tensor::Tensor;

struct CudaGatherState final : ops::KernelState {
  Shape data_shape;
  size_t axis = 0;
  std::vector<int64_t> indices;  // wrapped into [0, axis length)
};

class CudaGatherKernel final : public ops::OpKernel {
 public:
  explicit CudaGatherKernel(const ops::NodeInfo& node)
      : OpKernel(node), axis_(node.GetInt("axis", 0)) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    cudaStream_t stream = detail::StreamOf(node, data);
    AD_CHECK(data.rank() > 0, kInvalidArgument, "{}: cannot gather from a scalar", node);
    const size_t element = tensor::ElementSize(data.dtype());
    AD_CHECK(element == 4 || element == 8, kInvalidArgument,
             "{}: the data must have elements of 4 or 8 bytes on cuda, got {}", node,
             tensor::DTypeName(data.dtype()));
    auto state = std::make_unique<CudaGatherState>();
    state->data_shape = data.shape();
    state->axis = static_cast<size_t>(
        ops::NormalizeAxis(axis_, static_cast<int64_t>(data.rank()), node, "axis"));
    const size_t axis = state->axis;
    const int64_t dim = data.dim(axis);
    state->indices = indices.ToInt64Vector(node + ": indices");
    for (int64_t& index : state->indices) {
      AD_CHECK(index >= -dim && index < dim, kInvalidArgument,
               "{}: index {} is out of range for axis {} of length {} (data shape {})", node, index,
               axis, dim, tensor::ShapeToString(data.shape()));
      if (index < 0) index += dim;
    }
    Shape shape(data.shape().begin(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis));
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1,
                 data.shape().end());
    Tensor y(data.dtype(), shape, data.device());
    const auto n = static_cast<int64_t>(state->indices.size());
    if (y.numel() > 0) {
      const Tensor wrapped = Tensor::FromVector<int64_t>({n}, state->indices).To(data.device());
      detail::LaunchGatherRows(data.raw(), y.raw(), wrapped.device_data<int64_t>(),
                               ops::DimProduct(data.shape(), 0, axis), n, dim,
                               ops::DimProduct(data.shape(), axis + 1, data.rank()), element,
                               stream);
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
    const auto* state = dynamic_cast<const CudaGatherState*>(ctx.state());
    AD_CHECK(state != nullptr, kInternal, "{}: backward without the state of its forward", node);
    const Shape& shape = state->data_shape;
    const std::vector<int64_t>& indices = state->indices;
    const auto n = static_cast<int64_t>(indices.size());
    // The positions grouped by the row they name, rows ascending, positions ascending in each.
    std::vector<int64_t> order(indices.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return indices[static_cast<size_t>(a)] < indices[static_cast<size_t>(b)];
    });
    std::vector<int64_t> rows;
    std::vector<int64_t> starts;
    for (size_t p = 0; p < order.size(); ++p) {
      const int64_t row = indices[static_cast<size_t>(order[p])];
      if (rows.empty() || rows.back() != row) {
        rows.push_back(row);
        starts.push_back(static_cast<int64_t>(p));
      }
    }
    starts.push_back(n);
    // One upload: rows, starts and positions back to back.
    std::vector<int64_t> packed = rows;
    packed.insert(packed.end(), starts.begin(), starts.end());
    packed.insert(packed.end(), order.begin(), order.end());
    const auto count = static_cast<int64_t>(packed.size());
    const Tensor lists = Tensor::FromVector<int64_t>({count}, packed).To(dy->device());
    const auto* base = lists.device_data<int64_t>();
    detail::GatherGradPlan plan;
    plan.unique = static_cast<int64_t>(rows.size());
    plan.rows = base;
    plan.starts = base + plan.unique;
    plan.positions = base + 2 * plan.unique + 1;
    plan.outer = ops::DimProduct(shape, 0, state->axis);
    plan.n = n;
    plan.dim = shape[state->axis];
    plan.inner = ops::DimProduct(shape, state->axis + 1, shape.size());
    Tensor dx(tensor::DType::kFloat32, shape, dy->device());
    CheckCuda(cudaMemsetAsync(dx.raw(), 0, dx.nbytes(), stream), node + ": zeroing the gradient");
    detail::LaunchGatherGrad(dy->device_data<float>(), dx.device_data<float>(), plan, stream);
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
