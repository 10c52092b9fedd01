// Slice (opsets 10..17): data[starts:ends:steps], planned as slice_plan.h says (shared with the
// CUDA kernel). The output is a strided view of the input copied out; the gradient writes the
// output gradient back into those positions of a zero tensor.
#include <memory>

#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"
#include "runtime/ops/tensor/slice_plan.h"

namespace autodist::ops {
namespace {

struct SliceState final : KernelState {
  SlicePlan plan;
};

class SliceKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    auto state = std::make_unique<SliceState>();
    state->plan = PlanSlice(x.shape(), SliceList(ctx, 1, "starts"), SliceList(ctx, 2, "ends"),
                            ctx.has_input(3) ? SliceList(ctx, 3, "axes") : std::vector<int64_t>{},
                            ctx.has_input(4) ? SliceList(ctx, 4, "steps") : std::vector<int64_t>{},
                            ctx.Describe());
    const SlicePlan& plan = state->plan;
    if (plan.whole) {
      ctx.set_output(0, x);  // the whole input: no copy
    } else {
      Tensor y(x.dtype(), plan.output_shape);
      if (y.numel() > 0) {
        const size_t element = tensor::ElementSize(x.dtype());
        CopyStrided(static_cast<const std::byte*>(x.raw()) + plan.offset * element, plan.strides,
                    y.raw(), tensor::Strides(plan.output_shape), plan.output_shape, element);
      }
      ctx.set_output(0, std::move(y));
    }
    ctx.save_state(std::move(state));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const SlicePlan& plan = SavedState<SliceState>(ctx).plan;
    Tensor dx = Tensor::Zeros(DType::kFloat32, plan.input_shape);
    if (dy->numel() > 0) {
      CopyStrided(dy->raw(), tensor::Strides(dy->shape()), dx.data<float>() + plan.offset,
                  plan.strides, dy->shape(), sizeof(float));
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
};

// From opset 10 starts/ends/axes/steps are inputs (before, attributes without steps).
AUTODIST_REGISTER_KERNEL(Slice, 10, 17, SliceKernel);

}  // namespace
}  // namespace autodist::ops
