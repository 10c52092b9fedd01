// AveragePool, 2-D (opsets 7..17) and GlobalAveragePool (opsets 1..17).
//
// AveragePool: the mean of each window (kernel_shape, strides, pads or auto_pad, ceil_mode).
// The divisor follows PyTorch's avg_pool2d: with count_include_pad it is the window's size
// clipped to the padded input (so a ceil_mode window running past the end padding counts only
// what lies inside it), otherwise the number of input elements in the window.
// GlobalAveragePool: [N, C, D1..Dn] -> [N, C, 1..1], the mean over the spatial axes.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/nn/pool.h"
#include "runtime/ops/nn/row_sum.h"
#include "runtime/ops/nn/window.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

using nn::WindowGeometry;
using nn::WindowTaps;

// What AveragePool and GlobalAveragePool share: Y is linear in X, so Backward needs only dY and
// X's shape, which Forward saves (X and Y themselves can be freed early).
class MeanPoolKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const final {
    const Tensor& x = ctx.input(0);
    Tensor y = Pool(x, ctx.Describe());
    ctx.save_state(std::make_unique<ShapeState>(x.shape()));
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const final {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    ctx.set_input_grad(0, PoolGradient(*dy, SavedState<ShapeState>(ctx).shape, ctx.Describe()));
  }

  bool BackwardNeedsInput(size_t /*input*/) const final { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const final { return false; }

 protected:
  // Y from X; throws naming `what` on an input the op does not take.
  virtual Tensor Pool(const Tensor& x, const std::string& what) const = 0;
  // dX, of `x_shape`, from dY.
  virtual Tensor PoolGradient(const Tensor& dy, const Shape& x_shape,
                              const std::string& what) const = 0;
};

class AveragePoolKernel final : public MeanPoolKernel {
 public:
  explicit AveragePoolKernel(const NodeInfo& node)
      : MeanPoolKernel(node),
        attributes_(nn::ParseWindowAttributes(node, /*kernel_required=*/true)),
        count_include_pad_(node.GetInt("count_include_pad", 0) != 0) {
    AD_CHECK(attributes_.dilations == std::vector<int64_t>({1, 1}), kInvalidArgument,
             "{}: AveragePool has no dilations before opset 19", node.Describe());
  }

 private:
  Tensor Pool(const Tensor& x, const std::string& what) const override {
    const WindowGeometry g = nn::ResolvePoolInput(attributes_, x, what);
    Tensor y(DType::kFloat32, {x.dim(0), x.dim(1), g.out_h, g.out_w});
    const float* in = x.data<float>();
    float* out = y.data<float>();
    nn::ForEachPlane(x.dim(0) * x.dim(1), g, [&](int64_t p) {
      const float* plane = in + p * g.in_size();
      float* result = out + p * g.out_size();
      nn::ForEachWindow(g, [&](int64_t o, const WindowTaps& rows, const WindowTaps& cols) {
        // Dilation is 1 (checked in the constructor), so the taps are consecutive.
        result[o] = nn::WindowMean(plane, g, rows, cols, count_include_pad_);
      });
    });
    return y;
  }

  Tensor PoolGradient(const Tensor& dy, const Shape& x_shape,
                      const std::string& what) const override {
    const WindowGeometry g = nn::ResolvePoolWindow(attributes_, x_shape, what);
    Tensor dx = Tensor::Zeros(DType::kFloat32, x_shape);
    const float* grad = dy.data<float>();
    float* d = dx.data<float>();
    nn::ForEachPlane(x_shape[0] * x_shape[1], g, [&](int64_t p) {
      float* plane = d + p * g.in_size();
      const float* g_out = grad + p * g.out_size();
      nn::ForEachWindow(g, [&](int64_t o, const WindowTaps& rows, const WindowTaps& cols) {
        const float share = g_out[o] * nn::InverseWindowDivisor(rows, cols, count_include_pad_);
        for (int64_t ih = rows.first; ih < rows.end; ++ih) {
          for (int64_t iw = cols.first; iw < cols.end; ++iw) plane[ih * g.in_w + iw] += share;
        }
      });
    });
    return dx;
  }

  nn::WindowAttributes attributes_;
  bool count_include_pad_;
};

class GlobalAveragePoolKernel final : public MeanPoolKernel {
 public:
  using MeanPoolKernel::MeanPoolKernel;

 private:
  Tensor Pool(const Tensor& x, const std::string& what) const override {
    AD_CHECK(x.rank() >= 3 && x.dtype() == DType::kFloat32, kInvalidArgument,
             "{}: X must be float32 [N, C, D1, ...], got {} {}", what, tensor::DTypeName(x.dtype()),
             tensor::ShapeToString(x.shape()));
    const int64_t planes = x.dim(0) * x.dim(1);
    const int64_t size = planes == 0 ? 0 : x.numel() / planes;
    Shape out_shape = x.shape();
    std::fill(out_shape.begin() + 2, out_shape.end(), 1);
    Tensor y(DType::kFloat32, out_shape);
    const float* in = x.data<float>();
    float* out = y.data<float>();
    const float inverse = size > 0 ? 1.0F / static_cast<float>(size) : 0.0F;
    ParallelFor(planes, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, size)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t p = begin; p < end; ++p) {
                    const float* plane = in + p * size;
                    out[p] =
                        static_cast<float>(nn::RowSum(size, [&](int64_t i) { return plane[i]; })) *
                        inverse;
                  }
                });
    return y;
  }

  Tensor PoolGradient(const Tensor& dy, const Shape& x_shape,
                      const std::string& /*what*/) const override {
    Tensor dx(DType::kFloat32, x_shape);
    const int64_t planes = x_shape[0] * x_shape[1];
    const int64_t size = planes == 0 ? 0 : dx.numel() / planes;
    const float inverse = size > 0 ? 1.0F / static_cast<float>(size) : 0.0F;
    const float* grad = dy.data<float>();
    float* d = dx.data<float>();
    ParallelFor(planes, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, size)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t p = begin; p < end; ++p) {
                    std::fill(d + p * size, d + (p + 1) * size, grad[p] * inverse);
                  }
                });
    return dx;
  }
};

AUTODIST_REGISTER_KERNEL(AveragePool, 7, 17, AveragePoolKernel);
AUTODIST_REGISTER_KERNEL(GlobalAveragePool, 1, 17, GlobalAveragePoolKernel);

}  // namespace
}  // namespace autodist::ops
