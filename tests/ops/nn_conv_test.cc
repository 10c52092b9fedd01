#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/ops/parallel.h"
#include "tests/ops/op_test_util.h"

// OpenBLAS's own thread count (cblas.h is not on this target's include path).
extern "C" void openblas_set_num_threads(int threads);

namespace autodist::ops::testing {
namespace {

// Sets the kernel thread count (and optionally OpenBLAS's alone) for one test, restores it after.
class ThreadCount {
 public:
  explicit ThreadCount(int threads, int blas_threads = 0) : saved_(NumThreads()) {
    SetNumThreads(threads);
    if (blas_threads > 0) openblas_set_num_threads(blas_threads);
  }
  ~ThreadCount() { SetNumThreads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

// Expected values: PyTorch 1.13, torch.nn.functional.conv2d on the same Pattern inputs
// (asymmetric or SAME padding applied with F.pad first), printed with 7 significant digits.

TEST(ConvTest, PaddedConvolutionMatchesPyTorch) {
  // F.conv2d(x, w, b, padding=1)
  OpCase op{"Conv",
            {Pattern({1, 2, 4, 4}, 7, 11), Pattern({2, 2, 3, 3}, 5, 13),
             Tensor::FromVector<float>({2}, {0.5F, -0.25F})},
            {AttrInts("pads", {1, 1, 1, 1}), AttrInts("kernel_shape", {3, 3})}};
  ExpectTensorNear(RunOp(op)[0],
                   {2.125F,   -2.0F,   4.75F,   0.5625F,  -3.375F,  4.8125F, 6.3125F,  -2.5F,
                    2.125F,   -0.875F, -0.75F,  -1.375F,  -2.1875F, 4.9375F, 1.5625F,  -2.5625F,
                    -0.9375F, 0.8125F, 3.875F,  -3.4375F, -1.6875F, -0.625F, 3.0F,     -2.75F,
                    -0.625F,  2.875F,  -3.125F, -1.1875F, -0.0625F, 0.5F,    -0.1875F, -1.5F},
                   {1, 2, 4, 4});
}

TEST(ConvTest, StridedDilatedGroupedWithAsymmetricPadsMatchesPyTorch) {
  // F.conv2d(F.pad(x, (0, 1, 1, 2)), w, stride=2, dilation=2, groups=2)
  OpCase op{"Conv",
            {Pattern({1, 4, 6, 7}, 7, 11), Pattern({4, 2, 2, 2}, 5, 13)},
            {AttrInts("pads", {1, 0, 2, 1}), AttrInts("strides", {2, 2}),
             AttrInts("dilations", {2, 2}), AttrInt("group", 2)}};
  ExpectTensorNear(RunOp(op)[0],
                   {-0.375F,  2.5625F,  -2.0625F, -0.8125F, 0.0625F,  3.0F,     -0.875F,  -0.6875F,
                    2.9375F,  -0.375F,  -0.375F,  0.3125F,  -0.375F,  2.625F,   -2.625F,  -1.0625F,
                    -1.8125F, 7.0625F,  -0.8125F, -1.5625F, -0.25F,   0.75F,    -0.9375F, -2.625F,
                    3.8125F,  -2.0625F, -0.375F,  0.625F,   0.0F,     -1.3125F, 0.375F,   -0.25F,
                    -1.5625F, -2.0F,    3.25F,    0.25F,    0.3125F,  0.3125F,  -0.375F,  -1.75F,
                    2.875F,   -0.75F,   -1.6875F, 2.9375F,  -0.6875F, -1.9375F, 2.6875F,  -0.25F},
                   {1, 4, 4, 3});
}

TEST(ConvTest, PointwiseGroupedMatchesPyTorch) {
  // F.conv2d(x, w, b, groups=2) with a 1x1 kernel: the path without im2col.
  OpCase op{"Conv",
            {Pattern({2, 4, 2, 3}, 7, 11), Pattern({2, 2, 1, 1}, 5, 13),
             Tensor::FromVector<float>({2}, {1.0F, -2.0F})},
            {AttrInt("group", 2)}};
  ExpectTensorNear(RunOp(op)[0],
                   {2.625F,  0.25F,  2.0F,  -1.0625F, 0.6875F, 2.4375F,  -1.5F,   -1.5F,
                    -1.5F,   -1.5F,  -1.5F, -1.5F,    2.0F,    -1.0625F, 0.6875F, 2.4375F,
                    -0.625F, 1.125F, -1.5F, -1.5F,    -1.5F,   -1.5F,    -1.5F,   -4.25F},
                   {2, 2, 2, 3});
}

TEST(ConvTest, AutoPadSameMatchesPyTorch) {
  // 5x6 input, 3x3 kernel, stride 2: output ceil(in / 2) = 3x3; the total padding is 2 rows
  // (1 + 1) and 1 column, at the end for SAME_UPPER: F.pad(x, (0, 1, 1, 1)); at the beginning
  // for SAME_LOWER: F.pad(x, (1, 0, 1, 1)).
  const Tensor x = Pattern({1, 1, 5, 6}, 7, 11);
  const Tensor w = Pattern({1, 1, 3, 3}, 5, 13);
  OpCase upper{"Conv", {x, w}, {AttrString("auto_pad", "SAME_UPPER"), AttrInts("strides", {2, 2})}};
  ExpectTensorNear(RunOp(upper)[0],
                   {1.375F, 2.5625F, -1.25F, -2.9375F, -0.25F, 2.6875F, 2.1875F, -1.25F, 0.75F},
                   {1, 1, 3, 3});
  OpCase lower{"Conv", {x, w}, {AttrString("auto_pad", "SAME_LOWER"), AttrInts("strides", {2, 2})}};
  ExpectTensorNear(RunOp(lower)[0],
                   {1.1875F, -0.4375F, -1.3125F, 0.375F, 3.5625F, -2.6875F, 0.75F, -1.25F, 2.1875F},
                   {1, 1, 3, 3});
}

TEST(ConvTest, ValidAutoPadIgnoresPads) {
  // x = 0..8 as 3x3, w = [[1, 0], [0, 1]]: y[i][j] = x[i][j] + x[i+1][j+1] (worked by hand).
  OpCase op{"Conv",
            {Tensor::FromVector<float>({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}),
             Tensor::FromVector<float>({1, 1, 2, 2}, {1, 0, 0, 1})},
            {AttrString("auto_pad", "VALID"), AttrInts("pads", {1, 1, 1, 1})}};
  ExpectTensorNear(RunOp(op)[0], {4, 6, 10, 12}, {1, 1, 2, 2});
}

struct ConvConfig {
  std::string name;
  Shape x;
  Shape w;
  bool bias;
  std::vector<onnx::AttributeProto> attributes;
};

std::vector<ConvConfig> GradientConfigs() {
  return {
      {"Pad1", {2, 2, 5, 5}, {3, 2, 3, 3}, true, {AttrInts("pads", {1, 1, 1, 1})}},
      {"Stride2",
       {2, 2, 6, 5},
       {2, 2, 3, 3},
       false,
       {AttrInts("strides", {2, 2}), AttrInts("pads", {1, 1, 1, 1})}},
      {"DilatedAsymmetricPads",
       {1, 2, 6, 6},
       {2, 2, 2, 3},
       true,
       {AttrInts("dilations", {2, 1}), AttrInts("pads", {1, 0, 0, 2})}},
      {"Groups",
       {2, 4, 5, 5},
       {4, 2, 3, 2},
       true,
       {AttrInt("group", 2), AttrInts("strides", {2, 1})}},
      {"Depthwise",
       {1, 3, 5, 5},
       {3, 1, 3, 3},
       false,
       {AttrInt("group", 3), AttrInts("pads", {1, 1, 1, 1})}},
      {"Pointwise", {2, 4, 3, 3}, {3, 4, 1, 1}, true, {}},
      {"PointwiseGrouped", {2, 4, 3, 3}, {4, 2, 1, 1}, false, {AttrInt("group", 2)}},
      {"OneByOneStrided", {1, 2, 5, 5}, {2, 2, 1, 1}, true, {AttrInts("strides", {2, 2})}},
      {"SameUpper",
       {1, 2, 5, 6},
       {2, 2, 3, 3},
       false,
       {AttrString("auto_pad", "SAME_UPPER"), AttrInts("strides", {2, 2})}},
      {"SameLower",
       {1, 2, 5, 6},
       {2, 2, 3, 3},
       true,
       {AttrString("auto_pad", "SAME_LOWER"), AttrInts("strides", {2, 2})}},
      {"Valid",
       {1, 1, 6, 5},
       {1, 1, 2, 3},
       true,
       {AttrString("auto_pad", "VALID"), AttrInts("strides", {2, 2})}},
  };
}

class ConvGradientTest : public ::testing::TestWithParam<ConvConfig> {};

TEST_P(ConvGradientTest, MatchesFiniteDifferences) {
  const ConvConfig& config = GetParam();
  OpCase op{"Conv",
            {RandomTensor(config.x, 1), RandomTensor(config.w, 2),
             config.bias ? RandomTensor({config.w[0]}, 3) : Tensor()},
            config.attributes};
  ExpectGradientsMatch(op);
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvGradientTest, ::testing::ValuesIn(GradientConfigs()),
                         [](const auto& test) { return test.param.name; });

// An independent direct-loop convolution (forward and backward) to check the im2col/GEMM paths
// on layers too large for finite differences.
struct DirectConv {
  Shape x, w;
  int64_t stride, pad, dilation, group;

  int64_t Out(int64_t in, int64_t k) const {
    return (in + 2 * pad - (k - 1) * dilation - 1) / stride + 1;
  }

  template <typename Fn>  // fn(x_index, w_index, y_index) for every multiply of the convolution
  void ForEachTerm(Fn&& fn) const {
    const int64_t n = x[0], c = x[1], h = x[2], wd = x[3];
    const int64_t m = w[0], cg = w[1], kh = w[2], kw = w[3];
    const int64_t oh = Out(h, kh), ow = Out(wd, kw), mg = m / group;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < m; ++o)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j)
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t p = 0; p < kh; ++p)
                for (int64_t q = 0; q < kw; ++q) {
                  const int64_t ih = i * stride - pad + p * dilation;
                  const int64_t iw = j * stride - pad + q * dilation;
                  if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                  const int64_t channel = (o / mg) * cg + ci;
                  fn(((b * c + channel) * h + ih) * wd + iw, ((o * cg + ci) * kh + p) * kw + q,
                     ((b * m + o) * oh + i) * ow + j);
                }
  }
};

struct LargeConfig {
  std::string name;
  DirectConv conv;
  int threads;
  int blas_threads = 0;  // 0: as many as `threads`
};

// Parameters: the layer, and whether the session trains (a training forward may keep its
// columns for backward; otherwise backward unfolds X again).
class ConvDirectReferenceTest : public ::testing::TestWithParam<std::tuple<LargeConfig, bool>> {};

TEST_P(ConvDirectReferenceTest, ForwardAndBackwardMatchDirectLoops) {
  const LargeConfig& config = std::get<0>(GetParam());
  const DirectConv& conv = config.conv;
  ThreadCount threads(config.threads, config.blas_threads);
  const Tensor x = RandomTensor(conv.x, 11);
  const Tensor w = RandomTensor(conv.w, 12);
  const Tensor b = RandomTensor({conv.w[0]}, 13);
  const Shape y_shape{conv.x[0], conv.w[0], conv.Out(conv.x[2], conv.w[2]),
                      conv.Out(conv.x[3], conv.w[3])};
  const Tensor dy = RandomTensor(y_shape, 14);
  std::vector<double> y(static_cast<size_t>(tensor::NumElements(y_shape)));
  std::vector<double> dx(static_cast<size_t>(x.numel())), dw(static_cast<size_t>(w.numel()));
  std::vector<double> db(static_cast<size_t>(conv.w[0]));
  const float* xs = x.data<float>();
  const float* ws = w.data<float>();
  const float* dys = dy.data<float>();
  conv.ForEachTerm([&](int64_t xi, int64_t wi, int64_t yi) {
    y[static_cast<size_t>(yi)] += static_cast<double>(xs[xi]) * ws[wi];
    dx[static_cast<size_t>(xi)] += static_cast<double>(ws[wi]) * dys[yi];
    dw[static_cast<size_t>(wi)] += static_cast<double>(xs[xi]) * dys[yi];
  });
  const int64_t plane = y_shape[2] * y_shape[3];
  for (int64_t i = 0; i < tensor::NumElements(y_shape); ++i) {
    const auto m = static_cast<size_t>((i / plane) % conv.w[0]);
    y[static_cast<size_t>(i)] += b.data<float>()[m];
    db[m] += dys[i];
  }

  const int64_t s = conv.stride, p = conv.pad, d = conv.dilation;
  OpCase op{"Conv",
            {x, w, b},
            {AttrInts("strides", {s, s}), AttrInts("pads", {p, p, p, p}),
             AttrInts("dilations", {d, d}), AttrInt("group", conv.group)},
            1,
            17,
            std::get<1>(GetParam())};
  OpRunner runner(op);
  const OpResult result = runner.ForwardBackward(op.inputs, {dy});
  const auto expect = [](const Tensor& actual, const std::vector<double>& expected,
                         const char* what) {
    ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size())) << what;
    for (int64_t i = 0; i < actual.numel(); ++i) {
      const double e = expected[static_cast<size_t>(i)];
      ASSERT_NEAR(actual.GetAsDouble(i), e, 1e-4 * std::max(1.0, std::abs(e)))
          << what << " element " << i;
    }
  };
  ASSERT_EQ(result.outputs[0].shape(), y_shape);
  expect(result.outputs[0], y, "Y");
  expect(result.input_grads[0], dx, "dX");
  expect(result.input_grads[1], dw, "dW");
  expect(result.input_grads[2], db, "dB");
}

INSTANTIATE_TEST_SUITE_P(
    Layers, ConvDirectReferenceTest,
    ::testing::Combine(
        ::testing::Values(
            // One image's GEMM is large: one thread walks the batch in a block of images whose
            // im2col/col2im spreads over threads, and OpenBLAS threads each GEMM.
            LargeConfig{"LargeGemm", {{3, 32, 10, 10}, {32, 32, 3, 3}, 1, 1, 1, 1}, 4},
            // With a single-threaded OpenBLAS even large GEMMs are split over the batch.
            LargeConfig{
                "LargeGemmSingleThreadedBlas", {{5, 32, 10, 10}, {32, 32, 3, 3}, 1, 1, 1, 1}, 4, 1},
            LargeConfig{
                "LargeGemmStridedDilatedGrouped", {{2, 64, 12, 12}, {64, 32, 3, 3}, 2, 2, 2, 2}, 4},
            // Small GEMMs with enough of them to share: the batch of 5 is split into 3
            // (respectively 2) uneven chunks over threads, each with its own buffers and dW
            // partial.
            LargeConfig{"BatchSplitOverThreads", {{5, 8, 12, 12}, {16, 4, 3, 3}, 1, 1, 1, 2}, 4},
            LargeConfig{"BatchSplitPointwise", {{5, 32, 8, 8}, {32, 32, 1, 1}, 1, 0, 1, 1}, 4},
            LargeConfig{"SingleThread", {{3, 4, 7, 7}, {6, 4, 3, 3}, 2, 1, 1, 1}, 1}),
        ::testing::Bool()),
    [](const auto& test) {
      return std::get<0>(test.param).name + (std::get<1>(test.param) ? "Training" : "Inference");
    });

TEST(ConvTest, BackwardSkipsGradientsNobodyNeeds) {
  // The first layer's input (the image) needs no gradient: only dW and dB are produced.
  OpCase op{"Conv", {RandomTensor({1, 1, 4, 4}, 1), RandomTensor({2, 1, 3, 3}, 2)}};
  OpRunner runner(op);
  std::unique_ptr<KernelState> state;
  const std::vector<Tensor> outputs = runner.Forward(op.inputs, &state);
  const Tensor dy = RandomTensor(outputs[0].shape(), 3);
  std::vector<const Tensor*> in{&op.inputs[0], &op.inputs[1]};
  std::vector<const Tensor*> out{&outputs[0]};
  BackwardContext ctx(in, out, {&dy}, {false, true}, state.get(), nullptr);
  runner.kernel().Backward(ctx);
  const std::vector<Tensor> grads = ctx.take_input_grads();
  EXPECT_FALSE(grads[0].defined());
  EXPECT_TRUE(grads[1].defined());
  EXPECT_FALSE(runner.kernel().BackwardNeedsInput(2));
}

TEST(ConvTest, RejectsBadInputs) {
  const Tensor w = RandomTensor({2, 2, 3, 3}, 2);
  ExpectNodeError(OpCase{"Conv", {RandomTensor({1, 2, 8}, 1), RandomTensor({2, 2, 3}, 2)}},
                  "only 2-D convolution");
  ExpectNodeError(OpCase{"Conv", {RandomTensor({1, 3, 5, 5}, 1), w}},
                  "X has 3 channels but W [2, 2, 3, 3] with group 1 expects 2");
  ExpectNodeError(OpCase{"Conv",
                         {RandomTensor({1, 4, 5, 5}, 1), RandomTensor({3, 2, 3, 3}, 2)},
                         {AttrInt("group", 2)}},
                  "not divisible by group 2");
  ExpectNodeError(OpCase{"Conv", {RandomTensor({1, 2, 5, 5}, 1), w, RandomTensor({3}, 3)}},
                  "B must be");
  ExpectNodeError(
      OpCase{"Conv", {RandomTensor({1, 2, 5, 5}, 1), w}, {AttrInts("kernel_shape", {2, 2})}},
      "kernel_shape [2, 2] differs");
  ExpectNodeError(OpCase{"Conv", {RandomTensor({1, 2, 2, 5}, 1), w}}, "smaller than the window");
  ExpectNodeError(OpCase{"Conv", {RandomTensor({1, 2, 5, 5}, 1), w}, {AttrInts("strides", {1})}},
                  "'strides' must have 2 values");
  ExpectNodeError(OpCase{"Conv", {RandomTensor({1, 2, 5, 5}, 1), w}, {AttrInts("strides", {1, 0})}},
                  "'strides' values must be >= 1");
  ExpectNodeError(
      OpCase{"Conv", {RandomTensor({1, 2, 5, 5}, 1), w}, {AttrString("auto_pad", "SAME")}},
      "auto_pad must be");
  ExpectNodeError(OpCase{"Conv", {RandomTensor({1, 2, 5, 5}, 1), w}, {AttrInt("group", 0)}},
                  "group must be >= 1");
}

}  // namespace
}  // namespace autodist::ops::testing
