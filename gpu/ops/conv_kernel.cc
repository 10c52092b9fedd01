// Conv on CUDA, 2-D (opsets 1..17): the CPU kernel's semantics and checks (runtime/ops/nn/
// conv_geometry.h), float32. Two paths compute it, chosen per shape and direction (Y, dX, dW) as
// conv_choice.h says: by default the first run of a shape times both and keeps the faster;
// AUTODIST_CONV_PATH pins one (conv_path.h).
//
// im2col: a chunk of images is unfolded into one column matrix col [C * kH * kW, b * P]
// (P = outH * outW), and each group is one product on cuBLASLt over the chunk's positions in
// channel-major form, Y' [M, b * P] = W col, swapped into Y [b, M, P] with the bias added.
// Backward swaps dY into dY' once for both products: dW = dY' colᵀ (summed over the chunks) and
// dcol = Wᵀ dY', folded back by col2im. The products run in TF32 or BF16 when the session's
// precision asks. The column matrix is the largest buffer of a small network's step (9 floats per
// input element for a 3x3 kernel), so chunks keep it and Y' (or dY') within 32 MiB together, and
// backward unfolds the columns again rather than keeping forward's.
//
// cuDNN (cudnn_conv.h): the whole batch in one call per direction, with the algorithm cuDNN's
// own search found fastest. dB is the channel sums of dY on either path.
#include <algorithm>
#include <cstdlib>

#include "gpu/blas/matmul.h"
#include "gpu/ops/conv_choice.h"
#include "gpu/ops/kernel_util.h"
#include "gpu/ops/launch.h"
#include "runtime/ops/nn/conv_geometry.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

constexpr int64_t kMaxChunkFloats = int64_t{8} << 20;  // 32 MiB

using conv::ConvDirection;
using conv::ConvPath;
using ops::nn::ConvGeometry;
using tensor::DType;
using tensor::Tensor;

class CudaConvKernel final : public ops::OpKernel {
 public:
  explicit CudaConvKernel(const ops::NodeInfo& node)
      : OpKernel(node),
        attributes_(ops::nn::ParseWindowAttributes(node, /*kernel_required=*/false)),
        group_(ops::nn::ParseConvGroup(node)),
        math_(detail::GemmMathOf(node.precision())),
        mode_(conv::ParseConvPathMode(std::getenv(conv::kConvPathEnv))) {}

  void Forward(ops::ForwardContext& ctx) const override {
    const std::string& node = description();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    cudaStream_t stream = detail::StreamOf(node, x);
    detail::StreamOf(node, w);
    const ConvGeometry s = ops::nn::ResolveConv(attributes_, group_, x, w, node);
    const float* bias = nullptr;
    if (ctx.has_input(2)) {
      const Tensor& b = ctx.input(2);
      detail::StreamOf(node, b);
      ops::nn::CheckConvBias(b, s.out_channels, node);
      bias = b.device_data<float>();
    }
    Tensor y(DType::kFloat32, {s.batch, s.out_channels, s.window.out_h, s.window.out_w},
             x.device());
    if (y.numel() > 0 && s.taps == 0) {  // no products: Y is the bias, or zeros
      if (bias == nullptr) {
        y.SetZero();
      } else {
        detail::LaunchChannelAffine(nullptr, nullptr, bias, {s.batch, s.out_channels, s.pixels()},
                                    y.device_data<float>(), stream);
      }
    } else if (y.numel() > 0) {
      detail::CudnnConvCall call = Call(s, node, y.device().index, stream);
      call.x = x.device_data<float>();
      call.w = w.device_data<float>();
      call.bias = bias;
      call.y = y.device_data<float>();
      const auto im2col = [&] { Im2colForward(x, w, bias, s, y, stream); };
      const conv::ConvChoice choice =
          detail::ChooseConvPath(mode_, ConvDirection::kForward, call, im2col);
      if (choice.path == ConvPath::kCudnn) {
        detail::RunCudnnConv(ConvDirection::kForward, choice.cudnn, call);
      } else {
        im2col();
      }
    }
    ctx.set_output(0, std::move(y));
  }

  void Backward(ops::BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr) return;
    const std::string& node = description();
    const bool need_dx = ctx.needs_grad(0);
    const bool need_dw = ctx.needs_grad(1);
    const bool need_db = ctx.has_input(2) && ctx.needs_grad(2);
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    cudaStream_t stream = detail::StreamOf(node, *dy);
    const int device = dy->device().index;
    const ConvGeometry s = ops::nn::ResolveConv(attributes_, group_, x, w, node);
    const bool products = s.batch * s.pixels() > 0 && s.taps > 0;

    Tensor dw = need_dw ? Tensor(DType::kFloat32, w.shape(), w.device()) : Tensor();
    Tensor dx = need_dx ? Tensor(DType::kFloat32, x.shape(), x.device()) : Tensor();
    if (!products) {
      if (need_dw) dw.SetZero();
      if (need_dx) dx.SetZero();
    } else if (need_dw || need_dx) {
      detail::CudnnConvCall call = Call(s, node, device, stream);
      call.x = x.device_data<float>();
      call.w = w.device_data<float>();
      call.dy = dy->device_data<float>();
      call.dx = need_dx ? dx.device_data<float>() : nullptr;
      call.dw = need_dw ? dw.device_data<float>() : nullptr;
      const auto path = [&](bool needed, ConvDirection direction, bool for_dx) {
        if (!needed) return conv::ConvChoice{};
        return detail::ChooseConvPath(mode_, direction, call, [&] {
          Im2colBackward(x, w, *dy, s, for_dx ? &dx : nullptr, for_dx ? nullptr : &dw, stream);
        });
      };
      const conv::ConvChoice data = path(need_dx, ConvDirection::kBackwardData, true);
      const conv::ConvChoice filter = path(need_dw, ConvDirection::kBackwardFilter, false);
      // The directions left to im2col share one pass over the chunks (dY' swapped once).
      const bool im2col_dx = need_dx && data.path == ConvPath::kIm2col;
      const bool im2col_dw = need_dw && filter.path == ConvPath::kIm2col;
      if (im2col_dx || im2col_dw) {
        Im2colBackward(x, w, *dy, s, im2col_dx ? &dx : nullptr, im2col_dw ? &dw : nullptr, stream);
      }
      if (need_dx && !im2col_dx) {
        detail::RunCudnnConv(ConvDirection::kBackwardData, data.cudnn, call);
      }
      if (need_dw && !im2col_dw) {
        detail::RunCudnnConv(ConvDirection::kBackwardFilter, filter.cudnn, call);
      }
    }
    if (need_dw) ctx.set_input_grad(1, std::move(dw));
    if (need_dx) ctx.set_input_grad(0, std::move(dx));
    if (need_db) {
      const detail::ChannelLayout layout{s.batch, s.out_channels, s.pixels()};
      Tensor scratch(DType::kFloat64, {detail::ChannelSumScratch(layout, node)}, dy->device());
      Tensor sums(DType::kFloat64, {s.out_channels}, dy->device());
      detail::LaunchChannelSums(detail::ChannelSum::kValues, dy->device_data<float>(), nullptr,
                                nullptr, layout, scratch.device_data<double>(),
                                sums.device_data<double>(), stream);
      Tensor db(DType::kFloat32, {s.out_channels}, dy->device());
      detail::LaunchDoubleToFloat(sums.device_data<double>(), db.device_data<float>(),
                                  s.out_channels, stream);
      ctx.set_input_grad(2, std::move(db));
    }
  }

  // B's gradient needs only dY; X is read for dW, W for dX.
  bool BackwardNeedsInput(size_t input) const override { return input != 2; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  // The cuDNN call of this convolution, its tensors left for the direction to fill in.
  detail::CudnnConvCall Call(const ConvGeometry& s, const std::string& node, int device,
                             cudaStream_t stream) const {
    return detail::CudnnConvCall{
        .shape = &s, .math = math_, .device = device, .stream = stream, .node = &node};
  }

  // Y = the convolution of X with W, plus the bias where not null, on the im2col path.
  void Im2colForward(const Tensor& x, const Tensor& w, const float* bias, const ConvGeometry& s,
                     Tensor& y, cudaStream_t stream) const {
    ForEachChunk(s, [&](int64_t n0, int64_t count) {
      const int64_t columns = count * s.pixels();
      const Tensor col = Unfold(x, s, n0, count, stream);
      Tensor product = ChunkBuffer(s, s.out_image(), x.device());  // Y' [M, bP]
      for (int64_t g = 0; g < s.group; ++g) {  // Y'_g [Mg, bP] = W_g [Mg, taps] col_g
        Sgemm(GemmCall{.m = s.group_out,
                       .n = columns,
                       .k = s.taps,
                       .a = w.device_data<float>() + g * s.group_out * s.taps,
                       .b = col.device_data<float>() + g * s.taps * columns,
                       .c = product.device_data<float>() + g * s.group_out * columns,
                       .math = math_},
              x.device().index, stream);
      }
      detail::LaunchSwapLeadingAxes(product.device_data<float>(), s.out_channels, count, s.pixels(),
                                    bias, y.device_data<float>() + n0 * s.out_image(), stream);
    });
  }

  // dX and dW (each where not null) from dY on the im2col path, in one pass over the chunks.
  void Im2colBackward(const Tensor& x, const Tensor& w, const Tensor& dy, const ConvGeometry& s,
                      Tensor* dx, Tensor* dw, cudaStream_t stream) const {
    const int device = dy.device().index;
    ForEachChunk(s, [&](int64_t n0, int64_t count) {
      const int64_t columns = count * s.pixels();
      // dY' [M, bP]: the chunk's dY channel-major, the operand of both products.
      Tensor dy_swapped = ChunkBuffer(s, s.out_image(), x.device());
      detail::LaunchSwapLeadingAxes(dy.device_data<float>() + n0 * s.out_image(), count,
                                    s.out_channels, s.pixels(), nullptr,
                                    dy_swapped.device_data<float>(), stream);
      if (dw != nullptr) {  // dW_g [Mg, taps] += dY'_g [Mg, bP] col_gᵀ
        const Tensor col = Unfold(x, s, n0, count, stream);
        for (int64_t g = 0; g < s.group; ++g) {
          Sgemm(GemmCall{.trans_b = true,
                         .m = s.group_out,
                         .n = s.taps,
                         .k = columns,
                         .a = dy_swapped.device_data<float>() + g * s.group_out * columns,
                         .b = col.device_data<float>() + g * s.taps * columns,
                         .beta = n0 == 0 ? 0.0F : 1.0F,
                         .c = dw->device_data<float>() + g * s.group_out * s.taps,
                         .math = math_},
                device, stream);
        }
      }
      if (dx != nullptr) {  // dcol_g [taps, bP] = W_gᵀ dY'_g, folded back onto dX
        Tensor dcol = ChunkBuffer(s, s.in_channels * s.channel_columns(), x.device());
        for (int64_t g = 0; g < s.group; ++g) {
          Sgemm(GemmCall{.trans_a = true,
                         .m = s.taps,
                         .n = columns,
                         .k = s.group_out,
                         .a = w.device_data<float>() + g * s.group_out * s.taps,
                         .b = dy_swapped.device_data<float>() + g * s.group_out * columns,
                         .c = dcol.device_data<float>() + g * s.taps * columns,
                         .math = math_},
                device, stream);
        }
        detail::LaunchCol2Im(dcol.device_data<float>(), count, s.in_channels, s.window,
                             dx->device_data<float>() + n0 * s.in_image(), stream);
      }
    });
  }

  // Images per chunk: the chunk's buffers (the column matrix and dY channel-major) stay within
  // kMaxChunkFloats (one image at least).
  static int64_t ChunkImages(const ConvGeometry& s) {
    const int64_t per_image =
        std::max<int64_t>(1, s.in_channels * s.channel_columns() + s.out_image());
    return std::clamp<int64_t>(kMaxChunkFloats / per_image, 1, std::max<int64_t>(1, s.batch));
  }

  // Calls fn(n0, count) for consecutive chunks of the batch, ChunkImages(s) images each.
  template <typename Fn>
  static void ForEachChunk(const ConvGeometry& s, Fn&& fn) {
    const int64_t images = ChunkImages(s);
    for (int64_t n0 = 0; n0 < s.batch; n0 += images) fn(n0, std::min(images, s.batch - n0));
  }

  // A buffer of `per_image` floats for each image of a whole chunk, also for the last, shorter
  // one: buffers of one size per layer, which the tensor cache hands from step to step.
  static Tensor ChunkBuffer(const ConvGeometry& s, int64_t per_image,
                            const tensor::Device& device) {
    return Tensor(DType::kFloat32, {ChunkImages(s) * per_image}, device);
  }

  // The column matrix of images [n0, n0 + count): [C * kH * kW, count * P], packed at the start
  // of a chunk buffer.
  static Tensor Unfold(const Tensor& x, const ConvGeometry& s, int64_t n0, int64_t count,
                       cudaStream_t stream) {
    Tensor col = ChunkBuffer(s, s.in_channels * s.channel_columns(), x.device());
    detail::LaunchIm2Col(x.device_data<float>() + n0 * s.in_image(), count, s.in_channels, s.window,
                         col.device_data<float>(), stream);
    return col;
  }

  ops::nn::WindowAttributes attributes_;
  int64_t group_;
  GemmMath math_;            // the session's precision
  conv::ConvPathMode mode_;  // read from AUTODIST_CONV_PATH when the kernel is made
};

AUTODIST_REGISTER_DEVICE_KERNEL(Conv, 1, 17, CudaConvKernel, kCuda);

}  // namespace
}  // namespace autodist::gpu
