// AveragePool, 2-D (opsets 7..17) and GlobalAveragePool (opsets 1..17).
//
// AveragePool: the mean of each window (kernel_shape, strides, pads or auto_pad, ceil_mode).
// The divisor follows PyTorch's avg_pool2d: with count_include_pad it is the window's size
// clipped to the padded input (so a ceil_mode window running past the end padding counts only
// what lies inside it), otherwise the number of input elements in the window.
// GlobalAveragePool: [N, C, D1..Dn] -> [N, C, 1..1], the mean over the spatial axes.
#include <algorithm>

#include "runtime/common/error.h"
#include "runtime/ops/nn/row_sum.h"
#include "runtime/ops/nn/window.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

using nn::WindowGeometry;

struct InputShapeState final : KernelState {
  Shape input_shape;
};

// One output position's window along an axis: the input taps [first, end) and the divisor part.
struct AxisSpan {
  int64_t first;
  int64_t end;
  int64_t padded;  // length counted when padding is included
};

AxisSpan Span(int64_t out, int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t kernel,
              int64_t in) {
  const int64_t start = out * stride - pad_begin;
  const int64_t stop = std::min(start + kernel, in + pad_end);
  return {std::max<int64_t>(start, 0), std::min(stop, in), stop - start};
}

int64_t PlaneGrain(const WindowGeometry& g) {
  const int64_t work = std::max<int64_t>(1, g.out_size() * g.kernel_h * g.kernel_w);
  return std::max<int64_t>(1, (int64_t{1} << 14) / work);
}

class AveragePoolKernel final : public OpKernel {
 public:
  explicit AveragePoolKernel(const NodeInfo& node)
      : OpKernel(node),
        attributes_(nn::ParseWindowAttributes(node, /*kernel_required=*/true)),
        count_include_pad_(node.GetInt("count_include_pad", 0) != 0) {
    AD_CHECK(attributes_.dilations == std::vector<int64_t>({1, 1}), kInvalidArgument,
             "{}: AveragePool has no dilations before opset 19", node.Describe());
  }

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.rank() == 4 && x.dtype() == DType::kFloat32, kInvalidArgument,
             "{}: only 2-D pooling is supported: X must be float32 [N, C, H, W], got {} {}",
             ctx.Describe(), tensor::DTypeName(x.dtype()), tensor::ShapeToString(x.shape()));
    const WindowGeometry g =
        nn::ResolveWindow(attributes_, x.dim(2), x.dim(3), attributes_.kernel_shape[0],
                          attributes_.kernel_shape[1], ctx.Describe());
    Tensor y(DType::kFloat32, {x.dim(0), x.dim(1), g.out_h, g.out_w});
    const float* in = x.data<float>();
    float* out = y.data<float>();
    ParallelFor(x.dim(0) * x.dim(1), PlaneGrain(g), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const float* plane = in + p * g.in_size();
        float* result = out + p * g.out_size();
        ForEachWindow(g, [&](int64_t o, AxisSpan rows, AxisSpan cols, float inverse) {
          float sum = 0.0F;
          for (int64_t ih = rows.first; ih < rows.end; ++ih) {
            for (int64_t iw = cols.first; iw < cols.end; ++iw) sum += plane[ih * g.in_w + iw];
          }
          result[o] = sum * inverse;
        });
      }
    });
    auto state = std::make_unique<InputShapeState>();
    state->input_shape = x.shape();
    ctx.save_state(std::move(state));
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const Shape& shape = dynamic_cast<const InputShapeState&>(*ctx.state()).input_shape;
    const WindowGeometry g =
        nn::ResolveWindow(attributes_, shape[2], shape[3], attributes_.kernel_shape[0],
                          attributes_.kernel_shape[1], ctx.Describe());
    Tensor dx = Tensor::Zeros(DType::kFloat32, shape);
    const float* grad = dy->data<float>();
    float* d = dx.data<float>();
    ParallelFor(shape[0] * shape[1], PlaneGrain(g), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        float* plane = d + p * g.in_size();
        const float* g_out = grad + p * g.out_size();
        ForEachWindow(g, [&](int64_t o, AxisSpan rows, AxisSpan cols, float inverse) {
          const float share = g_out[o] * inverse;
          for (int64_t ih = rows.first; ih < rows.end; ++ih) {
            for (int64_t iw = cols.first; iw < cols.end; ++iw) plane[ih * g.in_w + iw] += share;
          }
        });
      }
    });
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  // Calls fn(output_index, rows, cols, 1 / divisor) for every output position of one plane.
  template <typename Fn>
  void ForEachWindow(const WindowGeometry& g, Fn&& fn) const {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const AxisSpan rows = Span(oh, g.stride_h, g.pad_top, g.pad_bottom, g.kernel_h, g.in_h);
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const AxisSpan cols = Span(ow, g.stride_w, g.pad_left, g.pad_right, g.kernel_w, g.in_w);
        const int64_t divisor = count_include_pad_
                                    ? rows.padded * cols.padded
                                    : std::max<int64_t>(0, rows.end - rows.first) *
                                          std::max<int64_t>(0, cols.end - cols.first);
        fn(oh * g.out_w + ow, rows, cols, divisor > 0 ? 1.0F / static_cast<float>(divisor) : 0.0F);
      }
    }
  }

  nn::WindowAttributes attributes_;
  bool count_include_pad_;
};

class GlobalAveragePoolKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    AD_CHECK(x.rank() >= 3 && x.dtype() == DType::kFloat32, kInvalidArgument,
             "{}: X must be float32 [N, C, D1, ...], got {} {}", ctx.Describe(),
             tensor::DTypeName(x.dtype()), tensor::ShapeToString(x.shape()));
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
    auto state = std::make_unique<InputShapeState>();
    state->input_shape = x.shape();
    ctx.save_state(std::move(state));
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const Shape& shape = dynamic_cast<const InputShapeState&>(*ctx.state()).input_shape;
    Tensor dx(DType::kFloat32, shape);
    const int64_t planes = shape[0] * shape[1];
    const int64_t size = planes == 0 ? 0 : dx.numel() / planes;
    const float inverse = size > 0 ? 1.0F / static_cast<float>(size) : 0.0F;
    const float* grad = dy->data<float>();
    float* d = dx.data<float>();
    ParallelFor(planes, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, size)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t p = begin; p < end; ++p) {
                    std::fill(d + p * size, d + (p + 1) * size, grad[p] * inverse);
                  }
                });
    ctx.set_input_grad(0, std::move(dx));
  }

  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }
};

AUTODIST_REGISTER_KERNEL(AveragePool, 7, 17, AveragePoolKernel);
AUTODIST_REGISTER_KERNEL(GlobalAveragePool, 1, 17, GlobalAveragePoolKernel);

}  // namespace
}  // namespace autodist::ops
