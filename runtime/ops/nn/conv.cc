// Conv, 2-D only (opsets 1..17): X [N, C, H, W], W [M, C/group, kH, kW], optional B [M] ->
// Y [N, M, outH, outW], with strides, dilations, groups and explicit or automatic padding.
//
// Each image is unfolded by im2col into a [C/group * kH * kW, outH * outW] column matrix per
// group and multiplied by that group's weight with one GEMM; a 1x1, stride-1, unpadded kernel
// uses the image itself as its column matrix. Backward: dW = dY col^T accumulated over the batch,
// dX = col2im(W^T dY), dB = sum of dY over N, H, W. Gradients nobody needs are not computed
// (the first layer's dX, typically). A training forward keeps its columns for backward's dW
// when they are small (ConvState); otherwise backward unfolds X again.
//
// Threading, chosen per layer:
//  * when OpenBLAS runs one image's GEMM on the calling thread (it is single-threaded, or the
//    GEMM is small), the batch is split over threads, each with its own column buffer and, in
//    backward, its own dW partial, summed at the end;
//  * otherwise (threaded OpenBLAS, large GEMM) one thread walks the batch in blocks of images; a
//    block's im2col / col2im is spread over threads and OpenBLAS threads each GEMM. Calling a
//    threaded OpenBLAS from many threads at once would queue them all on its single pool. One
//    parallel unfold per block, rather than per image, also limits how often our pool's threads
//    and OpenBLAS's take turns waking up.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/math/blas.h"
#include "runtime/ops/nn/conv_geometry.h"
#include "runtime/ops/nn/im2col.h"
#include "runtime/ops/nn/row_sum.h"
#include "runtime/ops/nn/window.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"

namespace autodist::ops {
namespace {

using nn::WindowGeometry;

// OpenBLAS 0.3 (interface/gemm.c) runs a GEMM with m * n * k <= 65536 * 4 single-threaded.
constexpr int64_t kSingleThreadedGemmWork = int64_t{1} << 18;
// Multiply-adds a thread should get before waking it is worth it (tens of microseconds).
constexpr int64_t kMinWorkPerThread = int64_t{1} << 17;
// Column-buffer size (floats, col + dcol) a block of images may take in the large-GEMM regime.
constexpr int64_t kMaxBlockColumns = int64_t{1} << 22;
// Whole-batch columns (floats) a training forward may keep for backward.
constexpr int64_t kMaxCachedColumns = int64_t{1} << 21;

// The geometry plus how the CPU walks the batch.
struct ConvShape : nn::ConvGeometry {
  bool pointwise = false;  // 1x1, stride 1, no padding: the image is its own column matrix
  int64_t chunks = 1;      // parts of the batch processed in parallel
  int64_t block = 1;       // images unfolded together

  // Offset of image b's group g column matrix within a block buffer.
  int64_t columns_offset(int64_t b, int64_t g) const {
    return (b * in_channels + g * group_in) * channel_columns();
  }
};

// Runs body(begin, end) over [0, units), in parallel when `parallel` and the work is worth it.
template <typename Body>
void RunUnits(int64_t units, int64_t work_per_unit, bool parallel, Body&& body) {
  if (!parallel) {
    body(int64_t{0}, units);
    return;
  }
  ParallelFor(units, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, work_per_unit)),
              body);
}

// im2col of images [n0, n0 + count) into `col` (per image and channel, see columns_offset).
void Unfold(const ConvShape& s, const float* in, int64_t n0, int64_t count, float* col,
            bool parallel, bool fill_padding) {
  const int64_t per_channel = s.channel_columns();
  RunUnits(count * s.in_channels, per_channel, parallel, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {  // u = b * C + c
      nn::Im2Col(in + (n0 * s.in_channels + u) * s.window.in_size(), 1, s.window,
                 col + u * per_channel, fill_padding);
    }
  });
}

// col2im of `col` added onto images [n0, n0 + count) of `image`.
void Fold(const ConvShape& s, const float* col, int64_t n0, int64_t count, float* image,
          bool parallel) {
  const int64_t per_channel = s.channel_columns();
  RunUnits(count * s.in_channels, per_channel, parallel, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      nn::Col2Im(col + u * per_channel, 1, s.window,
                 image + (n0 * s.in_channels + u) * s.window.in_size());
    }
  });
}

// The column buffers of one block of images (null when not needed).
struct Columns {
  float* col;   // im2col of X
  float* dcol;  // W^T dY before col2im
};

// Where a pass keeps its columns: `col` in a buffer per chunk (zeroed once, its padding entries
// then stay zero) or, with `cached`, in a whole-batch buffer (image n at n * image_columns).
struct ColumnPlan {
  bool col = false;
  bool dcol = false;
  float* cached = nullptr;
};

// Calls fn(chunk, n0, count, columns, parallel) for every block [n0, n0 + count) of images: the
// batch chunks in parallel, each chunk's blocks in order on one thread with its own buffers;
// `parallel` when the chunk runs alone and may use threads itself.
template <typename Fn>
void ForEachBlock(const ConvShape& s, const ColumnPlan& plan, Fn&& fn) {
  const int64_t image_columns = s.in_channels * s.channel_columns();
  const int64_t size = s.block * image_columns;
  ParallelFor(s.chunks, 1, [&](int64_t chunk_begin, int64_t chunk_end) {
    for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
      Tensor col =
          plan.col && plan.cached == nullptr ? Tensor::Zeros(DType::kFloat32, {size}) : Tensor();
      Tensor dcol = plan.dcol ? Tensor(DType::kFloat32, {size}) : Tensor();
      const int64_t end = s.batch * (chunk + 1) / s.chunks;
      for (int64_t n0 = s.batch * chunk / s.chunks; n0 < end; n0 += s.block) {
        const Columns columns{plan.cached != nullptr ? plan.cached + n0 * image_columns
                              : plan.col             ? col.data<float>()
                                                     : nullptr,
                              plan.dcol ? dcol.data<float>() : nullptr};
        fn(chunk, n0, std::min(s.block, end - n0), columns, s.chunks == 1);
      }
    }
  });
}

// Forward's columns kept for backward's dW (small-GEMM layers only, where im2col is a large
// share of the work, and only up to kMaxCachedColumns floats).
struct ConvState final : KernelState {
  Tensor columns;  // [N * C * kH * kW * outH * outW], or undefined
};

// The column matrix of image n (block position b), group g: the image itself when pointwise.
const float* ImageColumns(const ConvShape& s, const float* in, const float* col, int64_t n,
                          int64_t b, int64_t g) {
  return s.pointwise ? in + n * s.in_image() + g * s.group_in * s.pixels()
                     : col + s.columns_offset(b, g);
}

class ConvKernel final : public OpKernel {
 public:
  explicit ConvKernel(const NodeInfo& node)
      : OpKernel(node),
        attributes_(nn::ParseWindowAttributes(node, /*kernel_required=*/false)),
        group_(nn::ParseConvGroup(node)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const ConvShape s = Resolve(x, w, ctx.Describe());
    const float* bias = nullptr;
    if (ctx.has_input(2)) {
      const Tensor& b = ctx.input(2);
      nn::CheckConvBias(b, s.out_channels, ctx.Describe());
      bias = b.data<float>();
    }
    Tensor y(DType::kFloat32, {s.batch, s.out_channels, s.window.out_h, s.window.out_w});
    const float* in = x.data<float>();
    const float* weight = w.data<float>();
    float* out = y.data<float>();
    const int64_t pixels = s.pixels();

    // Training keeps the columns for backward when that is cheap enough (see ConvState).
    auto state = std::make_unique<ConvState>();
    const int64_t batch_columns = s.batch * s.in_channels * s.channel_columns();
    if (ctx.training() && !s.pointwise && s.block == 1 && batch_columns <= kMaxCachedColumns) {
      state->columns = Tensor(DType::kFloat32, {batch_columns});
    }
    const bool cached = state->columns.defined();
    ColumnPlan plan;
    plan.col = !s.pointwise;
    plan.cached = cached ? state->columns.data<float>() : nullptr;
    ForEachBlock(
        s, plan, [&](int64_t, int64_t n0, int64_t count, const Columns& buffers, bool parallel) {
          // A fresh whole-batch buffer needs its padding zeros written; a chunk buffer has them.
          if (!s.pointwise) {
            Unfold(s, in, n0, count, buffers.col, parallel, /*fill_padding=*/cached);
          }
          for (int64_t b = 0; b < count; ++b) {
            const int64_t n = n0 + b;
            for (int64_t g = 0; g < s.group; ++g) {
              Sgemm(false, false, s.group_out, pixels, s.taps, 1.0F,
                    weight + g * s.group_out * s.taps, ImageColumns(s, in, buffers.col, n, b, g),
                    0.0F, out + n * s.out_image() + g * s.group_out * pixels);
            }
            if (bias == nullptr) continue;
            for (int64_t m = 0; m < s.out_channels; ++m) {
              float* plane = out + n * s.out_image() + m * pixels;
              const float value = bias[m];
#pragma omp simd
              for (int64_t p = 0; p < pixels; ++p) plane[p] += value;
            }
          }
        });
    ctx.save_state(std::move(state));
    ctx.set_output(0, std::move(y));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy_tensor = ctx.output_grad(0);
    if (dy_tensor == nullptr) return;
    const bool need_dx = ctx.needs_grad(0);
    const bool need_dw = ctx.needs_grad(1);
    const bool need_db = ctx.has_input(2) && ctx.needs_grad(2);
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const ConvShape s = Resolve(x, w, ctx.Describe());
    const int64_t pixels = s.pixels();
    const float* dy = dy_tensor->data<float>();
    const float* in = x.data<float>();
    const float* weight = w.data<float>();

    // Written by the pointwise GEMMs, or zeroed block by block before col2im accumulates.
    Tensor dx = need_dx ? Tensor(DType::kFloat32, x.shape()) : Tensor();
    const int64_t weight_size = s.out_channels * s.taps;
    std::vector<Tensor> dw_parts;
    if (need_dw) {
      for (int64_t c = 0; c < s.chunks; ++c) {
        dw_parts.push_back(Tensor::Zeros(DType::kFloat32, {weight_size}));
      }
    }

    if (need_dx || need_dw) {
      auto* state = dynamic_cast<ConvState*>(ctx.state());
      const bool cached = state != nullptr && state->columns.defined();
      ColumnPlan plan;
      plan.col = need_dw && !s.pointwise;
      plan.dcol = need_dx && !s.pointwise;
      plan.cached = cached ? state->columns.data<float>() : nullptr;
      ForEachBlock(
          s, plan,
          [&](int64_t chunk, int64_t n0, int64_t count, const Columns& buffers, bool parallel) {
            if (need_dw) {  // dW_g += dY_g [Mg, P] x col_g^T [P, taps]
              if (!s.pointwise && !cached) Unfold(s, in, n0, count, buffers.col, parallel, false);
              float* dw = dw_parts[static_cast<size_t>(chunk)].data<float>();
              for (int64_t b = 0; b < count; ++b) {
                const int64_t n = n0 + b;
                for (int64_t g = 0; g < s.group; ++g) {
                  Sgemm(false, true, s.group_out, s.taps, pixels, 1.0F,
                        dy + n * s.out_image() + g * s.group_out * pixels,
                        ImageColumns(s, in, buffers.col, n, b, g), 1.0F,
                        dw + g * s.group_out * s.taps);
                }
              }
            }
            if (need_dx) {  // dcol_g [taps, P] = W_g^T [taps, Mg] x dY_g [Mg, P], folded back
              float* d = dx.data<float>();
              for (int64_t b = 0; b < count; ++b) {
                const int64_t n = n0 + b;
                for (int64_t g = 0; g < s.group; ++g) {
                  float* target = s.pointwise ? d + n * s.in_image() + g * s.group_in * pixels
                                              : buffers.dcol + s.columns_offset(b, g);
                  Sgemm(true, false, s.taps, pixels, s.group_out, 1.0F,
                        weight + g * s.group_out * s.taps,
                        dy + n * s.out_image() + g * s.group_out * pixels, 0.0F, target);
                }
              }
              if (!s.pointwise) {
                std::fill(d + n0 * s.in_image(), d + (n0 + count) * s.in_image(), 0.0F);
                Fold(s, buffers.dcol, n0, count, d, parallel);
              }
            }
          });
    }

    if (need_dx) ctx.set_input_grad(0, std::move(dx));
    if (need_dw) {
      float* total = dw_parts[0].data<float>();
      if (dw_parts.size() > 1) {
        ParallelFor(weight_size, 1 << 14, [&](int64_t begin, int64_t end) {
          for (size_t part = 1; part < dw_parts.size(); ++part) {
            const float* values = dw_parts[part].data<float>();
#pragma omp simd
            for (int64_t i = begin; i < end; ++i) total[i] += values[i];
          }
        });
      }
      ctx.set_input_grad(1, dw_parts[0].Reshaped(w.shape()));
    }
    if (need_db) ctx.set_input_grad(2, BiasGradient(s, dy));
  }

  // B's gradient needs only dY; X is read for dW, W for dX.
  bool BackwardNeedsInput(size_t input) const override { return input != 2; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  ConvShape Resolve(const Tensor& x, const Tensor& w, const std::string& what) const {
    ConvShape s;
    static_cast<nn::ConvGeometry&>(s) = nn::ResolveConv(attributes_, group_, x, w, what);
    const WindowGeometry& g = s.window;
    s.pointwise = g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
                  g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0;
    const int64_t gemm_work = s.group_out * s.taps * s.pixels();
    if (gemm_work <= kSingleThreadedGemmWork || openblas_get_num_threads() <= 1) {
      const int64_t worth = s.batch * s.group * gemm_work / kMinWorkPerThread;
      s.chunks = std::max<int64_t>(1, std::min<int64_t>({s.batch, worth, NumThreads()}));
    } else {
      const int64_t image_columns = std::max<int64_t>(1, s.in_channels * s.channel_columns());
      s.block = std::clamp<int64_t>(kMaxBlockColumns / (2 * image_columns), 1,
                                    std::max<int64_t>(1, s.batch));
    }
    return s;
  }

  static Tensor BiasGradient(const ConvShape& s, const float* dy) {
    Tensor db(DType::kFloat32, {s.out_channels});
    float* sums = db.data<float>();
    const int64_t pixels = s.pixels();
    const int64_t grain = std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, s.batch * pixels));
    ParallelFor(s.out_channels, grain, [&](int64_t begin, int64_t end) {
      for (int64_t m = begin; m < end; ++m) {
        double total = 0.0;
        for (int64_t n = 0; n < s.batch; ++n) {
          const float* plane = dy + n * s.out_image() + m * pixels;
          total += nn::RowSum(pixels, [&](int64_t p) { return plane[p]; });
        }
        sums[m] = static_cast<float>(total);
      }
    });
    return db;
  }

  nn::WindowAttributes attributes_;
  int64_t group_;
};

AUTODIST_REGISTER_KERNEL(Conv, 1, 17, ConvKernel);

}  // namespace
}  // namespace autodist::ops
