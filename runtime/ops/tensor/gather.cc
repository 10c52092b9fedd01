// Gather: output = data indexed along `axis` by `indices` (any rank; negative indices count from
// the end), shape data[:axis] + indices + data[axis+1:]. Data may be of any type (float32
// embeddings, int64 shapes). The gradient on axis 0 is row-sparse (an embedding lookup: the
// rows named by the indices, duplicates summed — TensorFlow's IndexedSlices, PyTorch's sparse
// embedding gradient); on other axes it is dense, the output gradient added into place.
#include <cstring>

#include "runtime/common/error.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/gather_plan.h"
#include "runtime/ops/tensor/layout.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::ops {
namespace {

// Work below this many bytes (or float additions) is not worth a thread of its own.
constexpr int64_t kGrain = int64_t{1} << 15;

struct GatherState final : KernelState {
  GatherPlan plan;
};

// For every (o, j): copies row idx[j] of block o of src ([outer, dim] rows of `Bytes` bytes, or
// `row_bytes` when Bytes is 0) to row (o, j) of dst. A fixed size makes the copy a single move
// when one element is gathered at a time (Gather on the last axis).
template <int64_t Bytes>
void GatherRows(const std::byte* src, std::byte* dst, const std::vector<int64_t>& idx,
                int64_t outer, int64_t dim, int64_t row_bytes) {
  const auto n = static_cast<int64_t>(idx.size());
  const int64_t bytes = Bytes > 0 ? Bytes : row_bytes;
  ParallelFor(outer * n, std::max<int64_t>(1, kGrain / std::max<int64_t>(bytes, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t u = begin; u < end; ++u) {
                  const int64_t o = u / n;
                  const std::byte* row = src + (o * dim + idx[static_cast<size_t>(u % n)]) * bytes;
                  std::memcpy(dst + u * bytes, row, static_cast<size_t>(bytes));
                }
              });
}

class GatherKernel final : public OpKernel {
 public:
  explicit GatherKernel(const NodeInfo& node) : OpKernel(node), axis_(node.GetInt("axis", 0)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    auto state = std::make_unique<GatherState>();
    state->plan = PlanGather(data.shape(), ctx.input(1), axis_, ctx.Describe());
    const GatherPlan& plan = state->plan;
    Tensor y(data.dtype(), plan.output_shape);
    const int64_t row_bytes = plan.inner * static_cast<int64_t>(tensor::ElementSize(data.dtype()));
    const auto* src = static_cast<const std::byte*>(data.raw());
    auto* dst = static_cast<std::byte*>(y.raw());
    if (y.numel() > 0) {
      switch (row_bytes) {
        case 4:
          GatherRows<4>(src, dst, plan.indices, plan.outer, plan.dim, row_bytes);
          break;
        case 8:
          GatherRows<8>(src, dst, plan.indices, plan.outer, plan.dim, row_bytes);
          break;
        default:
          GatherRows<0>(src, dst, plan.indices, plan.outer, plan.dim, row_bytes);
      }
    }
    ctx.save_state(std::move(state));
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const GatherPlan& plan = SavedState<GatherState>(ctx).plan;
    const Shape& shape = plan.data_shape;
    const auto n = static_cast<int64_t>(plan.indices.size());
    const int64_t inner = plan.inner;
    if (plan.axis == 0) {
      ctx.set_input_sparse_grad(
          0, tensor::CoalesceRows(plan.indices, dy->Reshaped({n, inner}), shape));
      return;
    }
    // Dense: add each gathered row back at its index. Threads own disjoint blocks (or, with few
    // blocks, disjoint columns), so repeated indices never race; each element sums in index
    // order, so the result is deterministic.
    const int64_t outer = plan.outer;
    const int64_t dim = plan.dim;
    Tensor dx = Tensor::Zeros(DType::kFloat32, shape);
    const auto* g = dy->data<float>();
    auto* d = dx.data<float>();
    const int64_t* idx = plan.indices.data();
    const auto add = [&](int64_t o0, int64_t o1, int64_t k0, int64_t k1) {
      for (int64_t o = o0; o < o1; ++o) {
        for (int64_t j = 0; j < n; ++j) {
          const float* from = g + (o * n + j) * inner;
          float* to = d + (o * dim + idx[j]) * inner;
          for (int64_t k = k0; k < k1; ++k) to[k] += from[k];
        }
      }
    };
    if (outer >= NumThreads()) {
      ParallelFor(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, n * inner)),
                  [&](int64_t begin, int64_t end) { add(begin, end, 0, inner); });
    } else {
      ParallelFor(inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, outer * n)),
                  [&](int64_t begin, int64_t end) { add(0, outer, begin, end); });
    }
    ctx.set_input_grad(0, std::move(dx));
  }

  bool IsDifferentiable(size_t input) const override { return input == 0; }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  int64_t axis_;
};

// Opsets 1..10 differ only in not promising negative indices, which are harmless to accept.
AUTODIST_REGISTER_KERNEL(Gather, 1, 17, GatherKernel);

}  // namespace
}  // namespace autodist::ops
