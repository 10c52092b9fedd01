// Every CUDA op kernel against the CPU kernel of the same op, through the CPU op tests' runner
// (tests/ops/op_test_util.h): the same cases on both backends, forward and backward, within a
// tolerance per case. Where the math is the same code on both (element_math, vector_math) the
// results are identical; sums of broadcast gradients may add in another order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpu/memory/cuda_tensor_memory.h"
#include "gpu/ops/conv_path.h"
#include "gpu/ops/cudnn_conv.h"
#include "runtime/ops/nn/conv_geometry.h"
#include "runtime/ops/registry.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/op_parity_util.h"
#include "tests/ops/kernel_catalog_check.h"
#include "tests/ops/op_test_util.h"
#include "tests/scoped_environment.h"

namespace autodist::gpu {
namespace {

using ops::testing::OpCase;
using ops::testing::OpRunner;
using ops::testing::RandomTensor;
using parity::Describe;
using parity::ExpectParity;
using parity::ExpectSame;
using parity::HasGradients;
using parity::ParityCase;
using parity::To;
using tensor::Device;
using tensor::Shape;
using tensor::Tensor;

// A 2-D Conv case: its shapes and window, from which both the node's attributes and the geometry
// the kernel resolves (for conv_path.h's keys) are made.
struct ConvForm {
  Shape x;
  Shape w;
  bool bias = false;
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
  std::vector<int64_t> dilations = {1, 1};
  int64_t group = 1;
  ops::nn::AutoPad auto_pad = ops::nn::AutoPad::kNotSet;  // kSameUpper: pads unused
};

std::vector<ConvForm> ConvForms() {
  return {
      {.x = {4, 1, 12, 12}, .w = {8, 1, 3, 3}, .bias = true, .pads = {1, 1, 1, 1}},
      {.x = {16, 8, 14, 14}, .w = {16, 8, 3, 3}, .bias = true, .pads = {1, 1, 1, 1}},
      // Columns of 16 MiB hold 37 of these images: im2col takes the batch in two chunks.
      {.x = {40, 16, 28, 28}, .w = {8, 16, 3, 3}, .bias = true, .pads = {1, 1, 1, 1}},
      // Asymmetric padding that changes the output: cuDNN's descriptor cannot say it.
      {.x = {2, 3, 11, 9},
       .w = {4, 3, 3, 2},
       .strides = {2, 1},
       .pads = {0, 1, 2, 1},
       .dilations = {2, 2}},
      {.x = {2, 4, 7, 7}, .w = {6, 2, 3, 3}, .bias = true, .group = 2},
      // Depthwise, strided and padded.
      {.x = {3, 6, 9, 9},
       .w = {6, 1, 3, 3},
       .bias = true,
       .strides = {2, 2},
       .pads = {1, 1, 1, 1},
       .group = 6},
      {.x = {3, 5, 4, 4}, .w = {2, 5, 1, 1}},
      // 1x1 with a stride (a ResNet's projection).
      {.x = {2, 8, 7, 7}, .w = {4, 8, 1, 1}, .bias = true, .strides = {2, 2}},
      {.x = {2, 3, 10, 10}, .w = {4, 3, 5, 5}, .strides = {2, 2}, .pads = {2, 2, 2, 2}},
      {.x = {1, 2, 6, 5},
       .w = {3, 2, 2, 3},
       .bias = true,
       .strides = {2, 2},
       .auto_pad = ops::nn::AutoPad::kSameUpper},
      // Asymmetric padding whose end rows and columns add no output: cuDNN's, padded alike.
      {.x = {2, 3, 7, 7}, .w = {4, 3, 3, 3}, .bias = true, .strides = {2, 2}, .pads = {0, 0, 1, 1}},
  };
}

OpCase ConvOp(const ConvForm& form, uint64_t& seed) {
  using ops::testing::AttrInts;
  OpCase op{"Conv", {RandomTensor(form.x, seed++), RandomTensor(form.w, seed++)}};
  op.attributes = {AttrInts("strides", form.strides), AttrInts("dilations", form.dilations),
                   ops::testing::AttrInt("group", form.group)};
  if (form.auto_pad == ops::nn::AutoPad::kSameUpper) {
    op.attributes.push_back(ops::testing::AttrString("auto_pad", "SAME_UPPER"));
  } else {
    op.attributes.push_back(AttrInts("pads", form.pads));
  }
  if (form.bias) op.inputs.push_back(RandomTensor({form.w[0]}, seed++));
  return op;
}

// The geometry the Conv kernels resolve for `form`.
ops::nn::ConvGeometry GeometryOf(const ConvForm& form) {
  ops::nn::WindowAttributes attributes;
  attributes.strides = form.strides;
  attributes.pads = form.pads;
  attributes.dilations = form.dilations;
  attributes.auto_pad = form.auto_pad;
  return ops::nn::ResolveConv(attributes, form.group, Tensor(tensor::DType::kFloat32, form.x),
                              Tensor(tensor::DType::kFloat32, form.w), "Conv");
}

std::vector<ParityCase> Cases() {
  std::vector<ParityCase> cases;
  const std::vector<Shape> unary_shapes{{1}, {7, 13}, {3, 4, 5}, {70001}, {0, 4}};
  // Exact where both backends run the same float operations; Log and Erf use each backend's
  // library function.
  const std::vector<std::pair<std::string, float>> unary{
      {"Neg", 0.0F},  {"Exp", 0.0F},     {"Log", 2e-7F}, {"Sqrt", 0.0F},
      {"Erf", 2e-7F}, {"Sigmoid", 0.0F}, {"Tanh", 0.0F}, {"Relu", 0.0F}};
  uint64_t seed = 1;
  for (const auto& [op, tolerance] : unary) {
    for (const Shape& shape : unary_shapes) {
      // Log and Sqrt on positive inputs; the others across zero.
      const bool positive = op == "Log" || op == "Sqrt";
      cases.push_back(
          {OpCase{op, {RandomTensor(shape, seed++, positive ? 0.1F : -3.0F, 3.0F)}}, tolerance});
    }
  }
  const std::vector<std::pair<Shape, Shape>> binary_shapes{
      {{2, 3}, {2, 3}}, {{4, 1, 5}, {3, 1}},       {{5}, {2, 3, 5}}, {{}, {3, 4}},
      {{6, 1}, {1, 7}}, {{2, 3, 4, 5}, {3, 1, 5}}, {{64, 10}, {10}}, {{300, 257}, {300, 1}}};
  for (const std::string op : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [a, b] : binary_shapes) {
      // Divisors away from zero.
      Tensor divisor = RandomTensor(b, seed++, 0.5F, 2.0F);
      Tensor other = RandomTensor(b, seed++, -2.0F, 2.0F);
      // Gradients of broadcast operands are sums: the GPU adds in double, the CPU in float
      // partial sums of 16 terms (reduce_sum.cc), so they differ by the CPU's rounding.
      cases.push_back(
          {OpCase{op, {RandomTensor(a, seed++, -2.0F, 2.0F), op == "Div" ? divisor : other}},
           a == b ? 0.0F : 1e-5F});
    }
  }
  // Gemm: the MLP's layers (transB, a bias row: the epilogue), and every other form of C, the
  // transposes and the weights. Products add in another order on the GPU.
  struct GemmForm {
    Shape a;
    Shape b;
    Shape c;  // {} with has_c false: no C
    bool has_c;
    int64_t trans_a;
    int64_t trans_b;
    float alpha;
    float beta;
  };
  const std::vector<GemmForm> gemms{
      {{64, 784}, {256, 784}, {256}, true, 0, 1, 1.0F, 1.0F},
      {{64, 256}, {128, 256}, {1, 128}, true, 0, 1, 1.0F, 1.0F},
      {{64, 128}, {10, 128}, {10}, true, 0, 1, 1.0F, 1.0F},
      {{5, 7}, {7, 3}, {5, 3}, true, 0, 0, 0.5F, 2.0F},
      {{7, 5}, {7, 3}, {5, 1}, true, 1, 0, 1.0F, 1.0F},
      {{7, 5}, {3, 7}, {}, true, 1, 1, 1.5F, -1.0F},
      {{5, 7}, {7, 3}, {3}, true, 0, 0, 1.0F, 0.5F},
      {{5, 7}, {7, 3}, {}, false, 0, 0, 1.0F, 1.0F},
  };
  // A float sum of k products strays from the exact one by about sqrt(k) roundings, in any order,
  // so the two backends' products (and their gradients' products, over the other dimensions) are
  // held to 4e-6 sqrt(k) for the longest of the three. On an H200 the kernel cuBLASLt's timing
  // chose for [64, 784] x [784, 256] differed from the CPU by up to 1.2e-5 (k = 784: 1.1e-4 here).
  for (const GemmForm& form : gemms) {
    OpCase op{
        "Gemm",
        {RandomTensor(form.a, seed++), RandomTensor(form.b, seed++)},
        {ops::testing::AttrInt("transA", form.trans_a),
         ops::testing::AttrInt("transB", form.trans_b),
         ops::testing::AttrFloat("alpha", form.alpha), ops::testing::AttrFloat("beta", form.beta)}};
    if (form.has_c) op.inputs.push_back(RandomTensor(form.c, seed++));
    const int64_t longest = std::max({form.a[0], form.a[1], form.b[0], form.b[1]});
    cases.push_back({op, std::max(1e-5F, 4e-6F * std::sqrt(static_cast<float>(longest)))});
  }
  // Gemm with the Relu the planner fuses into it (cuBLASLt's RELU_BIAS epilogue with a bias row,
  // RELU with any other C or none, a separate Relu pass when k = 0). The operands are small
  // integers, so every sum of products is exact in any order and Y, and with it Relu's mask
  // (y > 0) in backward, is the same on both backends: rounding in another order could put an
  // element near 0 on the other side. The gradients' products are of random output gradients,
  // held as Gemm's.
  const auto integers = [&](const Shape& shape) {
    Tensor t = RandomTensor(shape, seed++, -3.0F, 3.0F);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i]);
    return t;
  };
  const std::vector<GemmForm> fused_gemms{
      {{64, 784}, {256, 784}, {256}, true, 0, 1, 1.0F, 1.0F},
      {{64, 256}, {128, 256}, {1, 128}, true, 0, 1, 1.0F, 1.0F},
      {{5, 7}, {7, 3}, {5, 3}, true, 0, 0, 0.5F, 2.0F},
      {{7, 5}, {3, 7}, {}, true, 1, 1, 1.5F, -1.0F},
      {{5, 7}, {7, 3}, {}, false, 0, 0, 1.0F, 1.0F},
      {{4, 0}, {0, 6}, {6}, true, 0, 0, 1.0F, 1.0F},
  };
  for (const GemmForm& form : fused_gemms) {
    OpCase op{
        "Gemm",
        {integers(form.a), integers(form.b)},
        {ops::testing::AttrInt("transA", form.trans_a),
         ops::testing::AttrInt("transB", form.trans_b),
         ops::testing::AttrFloat("alpha", form.alpha), ops::testing::AttrFloat("beta", form.beta)}};
    if (form.has_c) op.inputs.push_back(integers(form.c));
    op.activation = ops::FusedActivation::kRelu;
    const int64_t longest = std::max({form.a[0], form.a[1], form.b[0], form.b[1]});
    cases.push_back({op, std::max(1e-5F, 4e-6F * std::sqrt(static_cast<float>(longest)))});
  }
  // SoftmaxCrossEntropyLoss: each reduction, weights, ignore_index, more axes, and the log_prob
  // output (whose gradient takes the other path of the backward). Exponentials and logarithms
  // are each backend's library functions.
  const auto labels = [&](const Shape& shape, int64_t classes) {
    std::mt19937_64 engine(seed++);
    std::vector<int64_t> values(static_cast<size_t>(tensor::NumElements(shape)));
    for (auto& v : values) v = static_cast<int64_t>(engine() % static_cast<uint64_t>(classes));
    return Tensor::FromVector<int64_t>(shape, values);
  };
  for (const std::string reduction : {"mean", "sum", "none"}) {
    cases.push_back({OpCase{"SoftmaxCrossEntropyLoss",
                            {RandomTensor({64, 10}, seed++, -3.0F, 3.0F), labels({64}, 10)},
                            {ops::testing::AttrString("reduction", reduction)}},
                     1e-5F});
  }
  cases.push_back({OpCase{"SoftmaxCrossEntropyLoss",
                          {RandomTensor({16, 7}, seed++, -3.0F, 3.0F), labels({16}, 7),
                           RandomTensor({7}, seed++, 0.1F, 2.0F)}},
                   1e-5F});
  {
    Tensor with_ignored = labels({4, 3}, 5);
    with_ignored.data<int64_t>()[2] = -1;
    with_ignored.data<int64_t>()[7] = -1;
    cases.push_back({OpCase{"SoftmaxCrossEntropyLoss",
                            {RandomTensor({4, 5, 3}, seed++, -3.0F, 3.0F), with_ignored},
                            {ops::testing::AttrInt("ignore_index", -1)},
                            /*num_outputs=*/2},
                     1e-5F});
  }
  // NegativeLogLikelihoodLoss: each reduction, weights, ignore_index with more axes, int32
  // targets. Log-probabilities as inputs; the reductions sum in double on both.
  for (const std::string reduction : {"mean", "sum", "none"}) {
    cases.push_back({OpCase{"NegativeLogLikelihoodLoss",
                            {RandomTensor({64, 10}, seed++, -5.0F, 0.0F), labels({64}, 10)},
                            {ops::testing::AttrString("reduction", reduction)}},
                     1e-5F});
  }
  cases.push_back({OpCase{"NegativeLogLikelihoodLoss",
                          {RandomTensor({16, 7}, seed++, -5.0F, 0.0F), labels({16}, 7),
                           RandomTensor({7}, seed++, 0.1F, 2.0F)}},
                   1e-5F});
  {
    Tensor with_ignored = labels({4, 3}, 5);
    with_ignored.data<int64_t>()[1] = 2;
    with_ignored.data<int64_t>()[5] = 2;
    cases.push_back({OpCase{"NegativeLogLikelihoodLoss",
                            {RandomTensor({4, 5, 3}, seed++, -5.0F, 0.0F), with_ignored},
                            {ops::testing::AttrInt("ignore_index", 2)}},
                     1e-5F});
    const Tensor targets = labels({8}, 6);
    std::vector<int32_t> narrow;
    for (int64_t i = 0; i < targets.numel(); ++i) {
      narrow.push_back(static_cast<int32_t>(targets.data<int64_t>()[i]));
    }
    cases.push_back({OpCase{"NegativeLogLikelihoodLoss",
                            {RandomTensor({8, 6}, seed++, -5.0F, 0.0F),
                             Tensor::FromVector<int32_t>({8}, narrow)}},
                     1e-5F});
  }
  // Conv: the CNN's layers, strides, dilations, asymmetric and automatic padding, groups, 1x1,
  // with and without a bias (ConvForms). The products sum in another order on the GPU (dW over
  // the whole batch's positions), on either path.
  for (const ConvForm& form : ConvForms()) cases.push_back({ConvOp(form, seed), 1e-4F});
  // MaxPool: the CNN's 2x2, overlapping windows with padding, ceil_mode with dilation, the
  // Indices output in both storage orders, ties (integer values) and a NaN. Exact: the same
  // comparisons pick the same element, and gradients add in the same order.
  {
    using ops::testing::AttrInt;
    using ops::testing::AttrInts;
    cases.push_back({OpCase{"MaxPool",
                            {RandomTensor({4, 8, 28, 28}, seed++)},
                            {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2})}},
                     0.0F});
    Tensor ties = RandomTensor({2, 3, 7, 6}, seed++, 0.0F, 3.0F);
    for (int64_t i = 0; i < ties.numel(); ++i) {
      ties.data<float>()[i] = std::floor(ties.data<float>()[i]);
    }
    ties.data<float>()[17] = NAN;
    cases.push_back({OpCase{"MaxPool",
                            {ties},
                            {AttrInts("kernel_shape", {3, 3}), AttrInts("pads", {1, 1, 1, 1})},
                            /*num_outputs=*/2},
                     0.0F});
    // Windows apart (stride 3 over a 2x2 window), and apart with padding: the gradient is written
    // from the windows, over zeros where no window reaches.
    cases.push_back({OpCase{"MaxPool",
                            {RandomTensor({2, 3, 7, 9}, seed++)},
                            {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {3, 2})},
                            /*num_outputs=*/2},
                     0.0F});
    cases.push_back({OpCase{"MaxPool",
                            {RandomTensor({2, 3, 5, 5}, seed++)},
                            {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2}),
                             AttrInts("pads", {1, 1, 1, 1})}},
                     0.0F});
    cases.push_back({OpCase{"MaxPool",
                            {RandomTensor({2, 2, 9, 10}, seed++)},
                            {AttrInts("kernel_shape", {2, 3}), AttrInts("strides", {2, 2}),
                             AttrInts("dilations", {2, 1}), AttrInt("ceil_mode", 1),
                             AttrInt("storage_order", 1)},
                            /*num_outputs=*/2},
                     0.0F});
  }
  // AveragePool: 2x2 windows tiling the input, overlapping 3x3 windows over padding counted and
  // not, and ceil_mode's last window running past the end padding. On our kernel the same float
  // sums in the same order as the CPU's, the gradient each window's share in output order; the
  // measured path (the default) may take cuDNN, which sums in its own order: within 1e-5
  // (tests/gpu/pool_path_test.cc pins each path).
  {
    using ops::testing::AttrInt;
    using ops::testing::AttrInts;
    cases.push_back({OpCase{"AveragePool",
                            {RandomTensor({4, 8, 28, 28}, seed++)},
                            {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2})}},
                     1e-5F});
    for (const int64_t include : {0, 1}) {
      cases.push_back({OpCase{"AveragePool",
                              {RandomTensor({2, 3, 7, 6}, seed++)},
                              {AttrInts("kernel_shape", {3, 3}), AttrInts("pads", {1, 1, 1, 1}),
                               AttrInt("count_include_pad", include)}},
                       1e-5F});
    }
    cases.push_back({OpCase{"AveragePool",
                            {RandomTensor({2, 2, 9, 10}, seed++)},
                            {AttrInts("kernel_shape", {3, 2}), AttrInts("strides", {2, 3}),
                             AttrInts("pads", {1, 0, 1, 0}), AttrInt("ceil_mode", 1)}},
                     1e-5F});
  }
  // BatchNormalization: training (opset 15's three outputs and opset 9's five, whose statistics
  // outputs get gradients too), inference, a training node in an evaluating session, and
  // [N, C] input. Sums in double on the GPU, float blocks in double on the CPU.
  {
    const auto batch_norm = [&](const Shape& x, int64_t opset, size_t outputs, bool training_mode,
                                bool session_training) {
      const int64_t c = x[1];
      OpCase op{
          "BatchNormalization",
          {RandomTensor(x, seed++, -2.0F, 3.0F), RandomTensor({c}, seed++, 0.5F, 1.5F),
           RandomTensor({c}, seed++), RandomTensor({c}, seed++),
           RandomTensor({c}, seed++, 0.5F, 2.0F)},
          {ops::testing::AttrFloat("epsilon", 1e-5F), ops::testing::AttrFloat("momentum", 0.9F)},
          outputs,
          opset,
          session_training};
      if (opset >= 14)
        op.attributes.push_back(ops::testing::AttrInt("training_mode", training_mode));
      cases.push_back({op, 1e-5F});
    };
    batch_norm({16, 8, 28, 28}, 15, 3, true, true);
    batch_norm({4, 3, 5, 5}, 9, 5, true, true);
    batch_norm({4, 3, 5, 5}, 15, 1, false, true);
    batch_norm({4, 3, 5, 5}, 15, 3, true, false);
    batch_norm({16, 6}, 15, 3, true, true);
  }
  // GlobalAveragePool: the ResNet's head, a 3-D input, planes of one element and of 10,000 (more
  // than a warp's lanes take at once). The GPU sums a plane in double, the CPU in float blocks.
  for (const Shape& shape :
       std::vector<Shape>{{64, 64, 7, 7}, {2, 3, 5, 4, 3}, {3, 2, 1, 1}, {2, 3, 100, 100}}) {
    cases.push_back({OpCase{"GlobalAveragePool", {RandomTensor(shape, seed++)}}, 1e-6F});
  }
  // Softmax and LogSoftmax: classifier rows, attention scores (rows of 28), rows longer than a
  // warp, a middle axis (strided rows), and opset 11's 2-D view. Exponentials are the same
  // function on both; sums add in another order.
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    cases.push_back({OpCase{op, {RandomTensor({64, 10}, seed++, -3.0F, 3.0F)}}, 1e-5F});
    cases.push_back({OpCase{op, {RandomTensor({2, 4, 28, 28}, seed++, -3.0F, 3.0F)}}, 1e-5F});
    cases.push_back({OpCase{op, {RandomTensor({4, 100}, seed++, -3.0F, 3.0F)}}, 1e-5F});
    cases.push_back({OpCase{op,
                            {RandomTensor({3, 5, 7}, seed++, -3.0F, 3.0F)},
                            {ops::testing::AttrInt("axis", 1)}},
                     1e-5F});
    OpCase coerced{
        op, {RandomTensor({2, 3, 4}, seed++, -3.0F, 3.0F)}, {ops::testing::AttrInt("axis", 1)}};
    coerced.opset = 11;
    cases.push_back({coerced, 1e-5F});
  }
  // LayerNormalization (opset 17): the LayerNorm/GELU block's and the Transformer's rows (64 wide,
  // two warps' worth), rows narrower than a warp, two normalized axes with a Scale and a B that
  // broadcast to them, no B, and the Mean and InvStdDev outputs (whose gradients reach dX).
  {
    using ops::testing::AttrInt;
    const auto layer_norm = [&](const Shape& x, const Shape& scale, const Shape& bias, int64_t axis,
                                size_t outputs) {
      OpCase op{"LayerNormalization",
                {RandomTensor(x, seed++, -2.0F, 3.0F), RandomTensor(scale, seed++, 0.5F, 1.5F)},
                {AttrInt("axis", axis), ops::testing::AttrFloat("epsilon", 1e-5F)},
                outputs};
      if (!bias.empty()) op.inputs.push_back(RandomTensor(bias, seed++));
      cases.push_back({op, 1e-5F});
    };
    layer_norm({16, 64}, {64}, {64}, -1, 1);
    layer_norm({4, 28, 64}, {64}, {64}, -1, 1);
    layer_norm({6, 5}, {5}, {5}, -1, 3);
    layer_norm({3, 4, 5}, {5}, {1, 5}, 1, 3);
    layer_norm({3, 4, 5}, {4, 5}, {}, 1, 1);
  }
  // Transpose: the default (axes reversed), attention's head split [N, T, H, D] -> [N, H, T, D],
  // a permutation of every axis, and one that moves only an axis of size 1 (a view). Copies.
  {
    using ops::testing::AttrInts;
    cases.push_back({OpCase{"Transpose", {RandomTensor({2, 3, 4}, seed++)}}, 0.0F});
    cases.push_back(
        {OpCase{
             "Transpose", {RandomTensor({2, 28, 4, 16}, seed++)}, {AttrInts("perm", {0, 2, 1, 3})}},
         0.0F});
    cases.push_back(
        {OpCase{
             "Transpose", {RandomTensor({3, 4, 5, 6}, seed++)}, {AttrInts("perm", {2, 0, 3, 1})}},
         0.0F});
    cases.push_back(
        {OpCase{"Transpose", {RandomTensor({3, 1, 5}, seed++)}, {AttrInts("perm", {1, 0, 2})}},
         0.0F});
  }
  // ReduceMean: the Transformer's mean over tokens, two axes kept, every axis (none given), a
  // negative axis. Sums in double on both; the mean divides the float sum by the count.
  {
    using ops::testing::AttrInt;
    using ops::testing::AttrInts;
    cases.push_back({OpCase{"ReduceMean",
                            {RandomTensor({64, 28, 64}, seed++)},
                            {AttrInts("axes", {1}), AttrInt("keepdims", 0)}},
                     1e-6F});
    cases.push_back(
        {OpCase{"ReduceMean", {RandomTensor({3, 4, 5}, seed++)}, {AttrInts("axes", {0, 2})}},
         1e-6F});
    cases.push_back({OpCase{"ReduceMean", {RandomTensor({2, 3}, seed++)}}, 1e-6F});
    cases.push_back(
        {OpCase{"ReduceMean", {RandomTensor({4, 5, 6}, seed++)}, {AttrInts("axes", {-1})}}, 1e-6F});
  }
  // MatMul: a Linear layer on a 3-D input (one product), attention's per-head products (one
  // strided batch), batch axes broadcast on both sides (a product per entry), 1-D operands, and
  // a plain 2-D product. Held, like Gemm, to 4e-6 sqrt(k) of the longest product involved.
  for (const auto& [a, b] : std::vector<std::pair<Shape, Shape>>{{{4, 28, 64}, {64, 192}},
                                                                 {{2, 4, 28, 16}, {2, 4, 16, 28}},
                                                                 {{3, 1, 5, 4}, {2, 4, 6}},
                                                                 {{5}, {5, 3}},
                                                                 {{2, 3, 5}, {5}},
                                                                 {{7, 5}, {5, 3}}}) {
    int64_t longest = 1;
    for (const int64_t dim : a) longest = std::max(longest, dim);
    for (const int64_t dim : b) longest = std::max(longest, dim);
    longest = std::max(longest, tensor::NumElements(a) / a.back());  // dB's inner, folded
    cases.push_back({OpCase{"MatMul", {RandomTensor(a, seed++), RandomTensor(b, seed++)}},
                     std::max(1e-5F, 4e-6F * std::sqrt(static_cast<float>(longest)))});
  }
  // Reshape (-1 and 0 in the target, here read back from the device: the cases give it as a
  // run-time input), Split (opset 13's lengths input, opset 11's attribute, equal pieces, a middle
  // axis), Concat (a middle axis of three inputs, the last axis) and Constant (a float and an
  // int64 value, put on the GPU).
  {
    using ops::testing::AttrInt;
    using ops::testing::AttrInts;
    cases.push_back({OpCase{"Reshape",
                            {RandomTensor({4, 28, 64}, seed++),
                             Tensor::FromVector<int64_t>({4}, {-1, 28, 4, 16})}},
                     0.0F});
    cases.push_back(
        {OpCase{"Reshape",
                {RandomTensor({2, 3, 4}, seed++), Tensor::FromVector<int64_t>({2}, {0, -1})}},
         0.0F});
    cases.push_back({OpCase{"Split",
                            {RandomTensor({4, 28, 192}, seed++),
                             Tensor::FromVector<int64_t>({3}, {64, 64, 64})},
                            {AttrInt("axis", -1)},
                            /*num_outputs=*/3},
                     0.0F});
    OpCase attribute_split{"Split",
                           {RandomTensor({5, 6, 2}, seed++)},
                           {AttrInt("axis", 1), AttrInts("split", {1, 2, 3})},
                           /*num_outputs=*/3};
    attribute_split.opset = 11;
    cases.push_back({attribute_split, 0.0F});
    cases.push_back({OpCase{"Split", {RandomTensor({6, 4}, seed++)}, {}, /*num_outputs=*/2}, 0.0F});
    cases.push_back({OpCase{"Concat",
                            {RandomTensor({2, 3, 4}, seed++), RandomTensor({2, 5, 4}, seed++),
                             RandomTensor({2, 1, 4}, seed++)},
                            {AttrInt("axis", 1)}},
                     0.0F});
    cases.push_back({OpCase{"Concat",
                            {RandomTensor({3, 2}, seed++), RandomTensor({3, 4}, seed++)},
                            {AttrInt("axis", -1)}},
                     0.0F});
    cases.push_back({OpCase{"Constant", {}, {ops::testing::AttrFloat("value_float", 1.5F)}}, 0.0F});
    cases.push_back({OpCase{"Constant", {}, {AttrInts("value_ints", {-1, 28, 4, 16})}}, 0.0F});
  }
  // Views: the same kernel on both backends.
  cases.push_back({OpCase{"Flatten", {RandomTensor({4, 1, 28, 28}, seed++)}}, 0.0F});
  cases.push_back(
      {OpCase{"Flatten", {RandomTensor({2, 3, 4}, seed++)}, {ops::testing::AttrInt("axis", 2)}},
       0.0F});
  cases.push_back({OpCase{"Identity", {RandomTensor({3, 5}, seed++)}}, 0.0F});
  {
    using ops::testing::AttrInt;
    using ops::testing::AttrInts;
    // Squeeze and Unsqueeze: opset 13's axes input (on the device, read back), opset 11's
    // attribute, and Squeeze of every size-1 axis.
    cases.push_back(
        {OpCase{"Squeeze",
                {RandomTensor({3, 1, 4, 1}, seed++), Tensor::FromVector<int64_t>({1}, {-1})}},
         0.0F});
    OpCase squeeze_attribute{"Squeeze", {RandomTensor({1, 5, 1}, seed++)}, {AttrInts("axes", {0})}};
    squeeze_attribute.opset = 11;
    cases.push_back({squeeze_attribute, 0.0F});
    cases.push_back({OpCase{"Squeeze", {RandomTensor({1, 5, 1}, seed++)}}, 0.0F});
    cases.push_back(
        {OpCase{"Unsqueeze",
                {RandomTensor({3, 4}, seed++), Tensor::FromVector<int64_t>({2}, {0, -1})}},
         0.0F});
    OpCase unsqueeze_attribute{"Unsqueeze", {RandomTensor({5}, seed++)}, {AttrInts("axes", {1})}};
    unsqueeze_attribute.opset = 11;
    cases.push_back({unsqueeze_attribute, 0.0F});
    // Shape: the whole shape, and opset 15's [start, end) with a negative start.
    cases.push_back({OpCase{"Shape", {RandomTensor({2, 3, 4}, seed++)}}, 0.0F});
    cases.push_back({OpCase{"Shape",
                            {RandomTensor({2, 3, 4, 5}, seed++)},
                            {AttrInt("start", -3), AttrInt("end", 3)}},
                     0.0F});
    // ReduceSum: opset 13's axes input (kept dims and not), its noop_with_empty_axes, every
    // axis, and opset 11's attribute. Sums in double on both.
    cases.push_back(
        {OpCase{"ReduceSum",
                {RandomTensor({64, 28, 64}, seed++), Tensor::FromVector<int64_t>({1}, {1})},
                {AttrInt("keepdims", 0)}},
         1e-6F});
    cases.push_back(
        {OpCase{"ReduceSum",
                {RandomTensor({3, 4, 5}, seed++), Tensor::FromVector<int64_t>({2}, {0, -1})}},
         1e-6F});
    cases.push_back({OpCase{"ReduceSum",
                            {RandomTensor({3, 4}, seed++), Tensor::FromVector<int64_t>({0}, {})},
                            {AttrInt("noop_with_empty_axes", 1)}},
                     0.0F});
    cases.push_back({OpCase{"ReduceSum", {RandomTensor({2, 3}, seed++)}}, 1e-6F});
    OpCase sum_attribute{"ReduceSum", {RandomTensor({4, 5, 6}, seed++)}, {AttrInts("axes", {2})}};
    sum_attribute.opset = 11;
    cases.push_back({sum_attribute, 1e-6F});
    // Slice: a middle range with axes, negative steps and starts past the end (clamped), every
    // axis without axes or steps, an empty result, and the whole input (no copy).
    const auto ints = [](std::vector<int64_t> values) {
      const auto n = static_cast<int64_t>(values.size());
      return Tensor::FromVector<int64_t>({n}, std::move(values));
    };
    cases.push_back({OpCase{"Slice",
                            {RandomTensor({4, 28, 64}, seed++), ints({1, 16}), ints({3, 48}),
                             ints({0, 2}), ints({1, 2})}},
                     0.0F});
    cases.push_back({OpCase{"Slice",
                            {RandomTensor({5, 6, 7}, seed++), ints({100, -2}), ints({-100, 0}),
                             ints({0, -1}), ints({-2, -3})}},
                     0.0F});
    cases.push_back(
        {OpCase{"Slice", {RandomTensor({6, 5}, seed++), ints({1, 1}), ints({-1, 4})}}, 0.0F});
    cases.push_back(
        {OpCase{"Slice", {RandomTensor({3, 4}, seed++), ints({2}), ints({2}), ints({1})}}, 0.0F});
    cases.push_back({OpCase{"Slice",
                            {RandomTensor({3, 4}, seed++), ints({0}),
                             ints({std::numeric_limits<int64_t>::max()}), ints({0})}},
                     0.0F});
    // Cast: float to integers (truncated toward zero, negative values included), integers to
    // float, and float to float (the input itself, its gradient passed back).
    const auto onnx_type = [](tensor::DType dtype) {
      return AttrInt("to", static_cast<int64_t>(dtype));
    };
    cases.push_back({OpCase{"Cast",
                            {RandomTensor({7, 13}, seed++, -100.0F, 100.0F)},
                            {onnx_type(tensor::DType::kInt64)}},
                     0.0F});
    cases.push_back({OpCase{"Cast",
                            {RandomTensor({70001}, seed++, -1000.0F, 1000.0F)},
                            {onnx_type(tensor::DType::kInt32)}},
                     0.0F});
    cases.push_back({OpCase{"Cast",
                            {Tensor::FromVector<int64_t>({5}, {-3, 0, 7, int64_t{1} << 40, 12})},
                            {onnx_type(tensor::DType::kFloat32)}},
                     0.0F});
    cases.push_back(
        {OpCase{"Cast", {RandomTensor({3, 4}, seed++)}, {onnx_type(tensor::DType::kFloat32)}},
         0.0F});
    // LeakyRelu: the default alpha, another, and a negative one (whose gradient reads the input).
    cases.push_back({OpCase{"LeakyRelu", {RandomTensor({7, 13}, seed++, -3.0F, 3.0F)}}, 0.0F});
    cases.push_back({OpCase{"LeakyRelu",
                            {RandomTensor({70001}, seed++, -3.0F, 3.0F)},
                            {ops::testing::AttrFloat("alpha", 0.2F)}},
                     0.0F});
    cases.push_back({OpCase{"LeakyRelu",
                            {RandomTensor({3, 4, 5}, seed++, -3.0F, 3.0F)},
                            {ops::testing::AttrFloat("alpha", -0.5F)}},
                     0.0F});
    // Dropout: the same engine state on both backends (OpRunner seeds it alike), so the same
    // mask; opset 12's ratio input with the mask output, opset 10's attribute, not training.
    cases.push_back(
        {OpCase{"Dropout",
                {RandomTensor({64, 100}, seed++), Tensor::FromVector<float>({}, {0.3F})},
                {},
                /*num_outputs=*/2},
         0.0F});
    OpCase dropout_attribute{
        "Dropout", {RandomTensor({70001}, seed++)}, {ops::testing::AttrFloat("ratio", 0.5F)}};
    dropout_attribute.opset = 10;
    cases.push_back({dropout_attribute, 0.0F});
    OpCase dropout_eval{"Dropout", {RandomTensor({3, 4}, seed++)}, {}, /*num_outputs=*/2};
    dropout_eval.training = false;
    cases.push_back({dropout_eval, 0.0F});
    // Pow: the one-element exponents with the CPU's exact forms (2, 0.5, -1, 0) and a general
    // one, an integer exponent, and broadcast tensors (base and exponent gradients summed back).
    // powf and logf are the GPU's: a few units in the last place from the CPU's.
    for (const float e : {2.0F, 0.5F, -1.0F, 0.0F, 1.7F}) {
      cases.push_back(
          {OpCase{"Pow",
                  {RandomTensor({7, 13}, seed++, 0.2F, 3.0F), Tensor::FromVector<float>({}, {e})}},
           1e-5F});
    }
    cases.push_back(
        {OpCase{"Pow",
                {RandomTensor({4, 5}, seed++, 0.2F, 3.0F), Tensor::FromVector<int64_t>({}, {3})}},
         1e-5F});
    cases.push_back({OpCase{"Pow",
                            {RandomTensor({4, 1, 5}, seed++, 0.2F, 3.0F),
                             RandomTensor({3, 1}, seed++, -2.0F, 2.0F)}},
                     1e-5F});
    // Gather: an embedding lookup (axis 0, 2-D indices with repeats and a negative one: the
    // gradient is row-sparse on both backends, compared densified), a middle axis, the last axis
    // with scalar indices, and int64 data (shapes).
    cases.push_back({OpCase{"Gather",
                            {RandomTensor({50, 16}, seed++),
                             Tensor::FromVector<int64_t>({2, 4}, {3, 7, 3, -1, 0, 3, 49, 7})}},
                     0.0F});
    cases.push_back(
        {OpCase{
             "Gather", {RandomTensor({3, 5, 4}, seed++), ints({4, 0, 4, 2})}, {AttrInt("axis", 1)}},
         0.0F});
    cases.push_back({OpCase{"Gather",
                            {RandomTensor({3, 5}, seed++), Tensor::FromVector<int64_t>({}, {-2})},
                            {AttrInt("axis", -1)}},
                     0.0F});
    cases.push_back({OpCase{"Gather", {ints({2, 28, 4, 16}), ints({0, 2})}}, 0.0F});
  }
  return cases;
}

class OpParityTest : public ::testing::Test {
 protected:
  void SetUp() override { InstallCudaTensorMemory(); }
};

TEST_F(OpParityTest, EveryCudaOpHasCases) {
  std::set<std::string> covered;
  for (const ParityCase& c : Cases()) covered.insert(c.op.op_type);
  const std::vector<std::string> registered =
      ops::KernelRegistry::Global().OpTypes(tensor::DeviceKind::kCuda);
  EXPECT_FALSE(registered.empty());
  for (const std::string& op : registered) {
    EXPECT_TRUE(covered.contains(op)) << op << " has a CUDA kernel but no parity case";
  }
}

// The model preflight (runtime/graph/op_support.h) reads the CUDA kernels from a catalogue the
// operator can link without CUDA: it must list exactly the kernels registered here. Needs no GPU.
TEST_F(OpParityTest, KernelCatalogueListsExactlyTheCudaKernels) {
  EXPECT_EQ(autodist::testing::CatalogDifferences(graph::Backend::kCuda, tensor::DeviceKind::kCuda),
            "");
}

// The cases themselves, on the CPU alone (and so in CI, without a GPU): each is an input the CPU
// kernel takes, so a GPU run spends no time on a case that is wrong.
TEST_F(OpParityTest, EveryCaseRunsOnTheCpu) {
  for (const ParityCase& c : Cases()) {
    SCOPED_TRACE(Describe(c.op));
    OpRunner cpu(c.op);
    const std::vector<Tensor> outputs = cpu.Forward(c.op.inputs);
    EXPECT_FALSE(outputs.empty());
    if (!HasGradients(cpu, c.op)) continue;  // Constant, Shape
    std::vector<Tensor> grads;
    for (size_t o = 0; o < outputs.size(); ++o) {
      grads.push_back(RandomTensor(outputs[o].shape(), 500 + o, -1.0F, 1.0F));
    }
    const ops::testing::OpResult result = cpu.ForwardBackward(c.op.inputs, grads);
    EXPECT_EQ(result.outputs.size(), outputs.size());
  }
}

TEST_F(OpParityTest, ForwardAndBackwardMatchTheCpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  for (const ParityCase& c : Cases()) ExpectParity(c);
}

TEST_F(OpParityTest, OtherElementTypesAreRefusedNamingTheNode) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const OpCase op{"Neg", {Tensor::FromVector<int64_t>({2}, {1, 2})}};
  OpRunner cuda(op, tensor::DeviceKind::kCuda);
  try {
    cuda.Forward(To(op.inputs, Device::Cuda(0)));
    FAIL() << "int64 Neg ran on cuda";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("Neg node 'test_Neg'"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("the input must be float32 on cuda, got int64"));
  }
}

TEST_F(OpParityTest, ALabelOutsideTheClassesIsTheCpusErrorOnCudaToo) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const OpCase op{"SoftmaxCrossEntropyLoss",
                  {RandomTensor({3, 4}, 1), Tensor::FromVector<int64_t>({3}, {0, 4, 1})}};
  OpRunner cuda(op, tensor::DeviceKind::kCuda);
  try {
    cuda.Forward(To(op.inputs, Device::Cuda(0)));
    FAIL() << "label 4 of 4 classes was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("SoftmaxCrossEntropyLoss node "
                                                   "'test_SoftmaxCrossEntropyLoss'"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("label 4 at position 1 is outside [0, 4)"));
  }
}

// Every op of the CPU engine has a CUDA kernel now: an op neither has is still named as such.
TEST_F(OpParityTest, AnOpWithoutACudaKernelIsNamedAsSuch) {
  try {
    OpRunner cuda(OpCase{"LSTM", {RandomTensor({4, 2}, 1)}}, tensor::DeviceKind::kCuda);
    FAIL() << "LSTM has no CUDA kernel, but one was made";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("unsupported op type 'LSTM' on cuda"));
  }
}

// The CPU engine's ops and the CUDA backend's are the same set. Needs no GPU.
TEST_F(OpParityTest, EveryCpuOpHasACudaKernel) {
  const std::vector<std::string> cpu =
      ops::KernelRegistry::Global().OpTypes(tensor::DeviceKind::kCpu);
  const std::vector<std::string> cuda =
      ops::KernelRegistry::Global().OpTypes(tensor::DeviceKind::kCuda);
  for (const std::string& op : cpu) {
    EXPECT_TRUE(std::find(cuda.begin(), cuda.end(), op) != cuda.end())
        << op << " has a CPU kernel but no CUDA kernel";
  }
}

// Conv's paths on CUDA (gpu/ops/conv_path.h, conv_choice.h): the rules of the choice, without a
// GPU, then each path pinned, and the measured choice, against the CPU.

// Sets AUTODIST_CONV_PATH for the kernels made while it lives (a kernel reads it when made), and
// restores what was there.
class ConvPathEnvironment : public autodist::testing::ScopedEnvironment {
 public:
  explicit ConvPathEnvironment(const char* mode) : ScopedEnvironment(conv::kConvPathEnv, mode) {}
};

constexpr std::array<conv::ConvDirection, 3> kConvDirections{conv::ConvDirection::kForward,
                                                             conv::ConvDirection::kBackwardData,
                                                             conv::ConvDirection::kBackwardFilter};

TEST(ConvPathTest, ModesParseAndAnyOtherIsRefusedNamingTheVariable) {
  EXPECT_EQ(conv::ParseConvPathMode(nullptr), conv::ConvPathMode::kMeasured);
  EXPECT_EQ(conv::ParseConvPathMode(""), conv::ConvPathMode::kMeasured);
  EXPECT_EQ(conv::ParseConvPathMode("measured"), conv::ConvPathMode::kMeasured);
  EXPECT_EQ(conv::ParseConvPathMode("im2col"), conv::ConvPathMode::kIm2col);
  EXPECT_EQ(conv::ParseConvPathMode("cudnn"), conv::ConvPathMode::kCudnn);
  for (const conv::ConvPathMode mode :
       {conv::ConvPathMode::kMeasured, conv::ConvPathMode::kIm2col, conv::ConvPathMode::kCudnn}) {
    EXPECT_EQ(conv::ParseConvPathMode(std::string(conv::ConvPathModeName(mode)).c_str()), mode);
  }
  try {
    conv::ParseConvPathMode("CUDNN");
    FAIL() << "'CUDNN' was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(error.what(),
                 "environment variable AUTODIST_CONV_PATH: expected one of measured, im2col, "
                 "cudnn, got 'CUDNN'");
  }
}

// A Conv kernel reads the variable when it is made: a bad value fails there, before any GPU work
// (so this needs no GPU).
TEST(ConvPathTest, AKernelMadeWithABadModeSaysWhy) {
  const ConvPathEnvironment environment("fastest");
  uint64_t seed = 1;
  const OpCase op = ConvOp(ConvForms()[0], seed);
  EXPECT_THAT([&] { OpRunner cuda(op, tensor::DeviceKind::kCuda); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr(
                  "AUTODIST_CONV_PATH: expected one of measured, im2col, cudnn, got 'fastest'")));
}

TEST(ConvPathTest, TheShapeKeyTellsEveryFieldApart) {
  const ops::nn::ConvGeometry base = GeometryOf(ConvForms()[1]);
  const conv::ConvShapeKey key = conv::ConvShapeKeyOf(base, GemmMath::kFp32, 0);
  EXPECT_EQ(key, conv::ConvShapeKeyOf(base, GemmMath::kFp32, 0));
  EXPECT_NE(key, conv::ConvShapeKeyOf(base, GemmMath::kTf32, 0));
  EXPECT_NE(key, conv::ConvShapeKeyOf(base, GemmMath::kFp32, 1));
  // Each of the geometry's fields, changed alone, makes another key.
  const std::vector<std::function<void(ops::nn::ConvGeometry&)>> changes{
      [](auto& s) { ++s.batch; },
      [](auto& s) { ++s.in_channels; },
      [](auto& s) { ++s.out_channels; },
      [](auto& s) { ++s.group; },
      [](auto& s) { ++s.window.in_h; },
      [](auto& s) { ++s.window.in_w; },
      [](auto& s) { ++s.window.kernel_h; },
      [](auto& s) { ++s.window.kernel_w; },
      [](auto& s) { ++s.window.stride_h; },
      [](auto& s) { ++s.window.stride_w; },
      [](auto& s) { ++s.window.pad_top; },
      [](auto& s) { ++s.window.pad_left; },
      [](auto& s) { ++s.window.pad_bottom; },
      [](auto& s) { ++s.window.pad_right; },
      [](auto& s) { ++s.window.dilation_h; },
      [](auto& s) { ++s.window.dilation_w; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    ops::nn::ConvGeometry changed = base;
    changes[i](changed);
    EXPECT_NE(key, conv::ConvShapeKeyOf(changed, GemmMath::kFp32, 0)) << "change " << i;
  }
}

TEST(ConvPathTest, CudnnDescribesSymmetricPaddingAndEndPaddingThatAddsNoOutput) {
  const std::vector<ConvForm> forms = ConvForms();
  EXPECT_TRUE(conv::CudnnDescribes(GeometryOf(forms[0])));  // pads 1 all round
  EXPECT_TRUE(conv::CudnnDescribes(GeometryOf(forms[4])));  // groups, no padding
  EXPECT_TRUE(conv::CudnnDescribes(GeometryOf(forms[5])));  // depthwise
  EXPECT_TRUE(conv::CudnnDescribes(GeometryOf(forms[7])));  // 1x1, strided
  // Bottom padding 2 against top 0 adds an output row: not cuDNN's.
  EXPECT_FALSE(conv::CudnnDescribes(GeometryOf(forms[3])));
  // SAME_UPPER resolved to pads alike at both ends.
  EXPECT_TRUE(conv::CudnnDescribes(GeometryOf(forms[9])));
  // Over 7 x 7 with a 3 x 3 kernel and stride 2, an end padding of 1 adds no output, so the start's
  // padding on both ends says it.
  const ops::nn::ConvGeometry uneven = GeometryOf(forms[10]);
  EXPECT_NE(uneven.window.pad_top, uneven.window.pad_bottom);
  EXPECT_TRUE(conv::CudnnDescribes(uneven));
  // Nothing to compute: im2col's early returns take it.
  ConvForm empty = forms[0];
  empty.x[0] = 0;
  EXPECT_FALSE(conv::CudnnDescribes(GeometryOf(empty)));
}

TEST(ConvPathTest, TheMeasuredChoiceIsTheFasterPathAndATieKeepsIm2col) {
  EXPECT_EQ(conv::FasterPath(std::nullopt, 5.0F), conv::ConvPath::kIm2col);
  EXPECT_EQ(conv::FasterPath(1.0F, 5.0F), conv::ConvPath::kCudnn);
  EXPECT_EQ(conv::FasterPath(5.0F, 1.0F), conv::ConvPath::kIm2col);
  EXPECT_EQ(conv::FasterPath(2.0F, 2.0F), conv::ConvPath::kIm2col);
}

TEST(ConvPathTest, TheCacheDecidesOncePerShapeDirectionAndMode) {
  conv::ConvChoiceCache cache;
  int decided = 0;
  const auto decide = [&] {
    ++decided;
    conv::ConvChoice choice;
    choice.path = conv::ConvPath::kCudnn;
    choice.cudnn.algorithm = decided;
    return choice;
  };
  const conv::ConvShapeKey key =
      conv::ConvShapeKeyOf(GeometryOf(ConvForms()[1]), GemmMath::kFp32, 0);
  conv::ConvShapeKey other = key;
  ++other.batch;
  const auto measured = conv::ConvPathMode::kMeasured;
  EXPECT_FALSE(cache.Find(key, conv::ConvDirection::kForward, measured).has_value());
  EXPECT_EQ(cache.ChooseOnce(key, conv::ConvDirection::kForward, measured, decide).cudnn.algorithm,
            1);
  EXPECT_EQ(cache.ChooseOnce(key, conv::ConvDirection::kForward, measured, decide).cudnn.algorithm,
            1);
  EXPECT_EQ(decided, 1);
  ASSERT_TRUE(cache.Find(key, conv::ConvDirection::kForward, measured).has_value());
  EXPECT_EQ(cache.Find(key, conv::ConvDirection::kForward, measured)->path, conv::ConvPath::kCudnn);
  cache.ChooseOnce(key, conv::ConvDirection::kBackwardData, measured, decide);
  cache.ChooseOnce(key, conv::ConvDirection::kForward, conv::ConvPathMode::kCudnn, decide);
  cache.ChooseOnce(other, conv::ConvDirection::kForward, measured, decide);
  EXPECT_EQ(decided, 4);
  EXPECT_EQ(cache.decisions(), 4U);
  EXPECT_FALSE(cache.Find(other, conv::ConvDirection::kBackwardFilter, measured).has_value());
}

// cuDNN's path before it touches a device: a shape its descriptor cannot describe has no
// algorithm (im2col takes it), asked of no GPU.
TEST(ConvPathTest, AShapeCudnnCannotDescribeHasNoAlgorithmAndNeedsNoGpu) {
  const ops::nn::ConvGeometry s = GeometryOf(ConvForms()[3]);
  const std::string node = "Conv node 'uneven'";
  const detail::CudnnConvCall call{.shape = &s, .node = &node};
  for (const conv::ConvDirection direction : kConvDirections) {
    EXPECT_FALSE(detail::FindCudnnAlgorithm(direction, call).has_value())
        << conv::ConvDirectionName(direction);
  }
}

// Where cuDNN cannot start (here: no usable driver), its path fails as an autodist error naming
// the node, not a crash. On a GPU machine ConvPathParityTest runs the path instead.
TEST(ConvPathTest, CudnnThatCannotStartIsAnErrorNamingTheNode) {
  if (!DiscoverGpus().gpus.empty()) GTEST_SKIP() << "checks the failure where no GPU is usable";
  if (!detail::CudnnInBuild()) GTEST_SKIP() << "this build has no cuDNN";
  const ops::nn::ConvGeometry s = GeometryOf(ConvForms()[0]);
  const std::string node = "Conv node 'first'";
  const detail::CudnnConvCall call{.shape = &s, .node = &node};
  try {
    detail::FindCudnnAlgorithm(conv::ConvDirection::kForward, call);
    FAIL() << "cuDNN started without a usable GPU";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(error.what(),
                ::testing::StartsWith("Conv node 'first': cuDNN's handle on GPU 0: "));
  }
}

class ConvPathParityTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { InstallCudaTensorMemory(); }
};

// Every Conv case with the path pinned (or measured), forward and both gradients against the CPU
// within 1e-4 relative, and the cache saying which path ran: cuDNN wherever its descriptor
// describes the shape when pinned to it (it has FMA-only, deterministic algorithms for these),
// im2col elsewhere.
TEST_P(ConvPathParityTest, ForwardAndBothGradientsMatchTheCpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const conv::ConvPathMode mode = conv::ParseConvPathMode(GetParam());
  if (mode == conv::ConvPathMode::kCudnn && !detail::CudnnInBuild()) {
    GTEST_SKIP() << "this build has no cuDNN";
  }
  const ConvPathEnvironment environment(GetParam());
  uint64_t seed = 1000;
  for (const ConvForm& form : ConvForms()) {
    ExpectParity({ConvOp(form, seed), 1e-4F});
    if (mode == conv::ConvPathMode::kIm2col) continue;
    const ops::nn::ConvGeometry s = GeometryOf(form);
    const conv::ConvShapeKey key = conv::ConvShapeKeyOf(s, GemmMath::kFp32, 0);
    for (const conv::ConvDirection direction : kConvDirections) {
      const std::optional<conv::ConvChoice> choice =
          conv::ConvChoiceCache::Global().Find(key, direction, mode);
      ASSERT_TRUE(choice.has_value()) << GetParam() << " " << conv::ConvDirectionName(direction);
      if (mode == conv::ConvPathMode::kCudnn) {
        EXPECT_EQ(choice->path,
                  conv::CudnnDescribes(s) ? conv::ConvPath::kCudnn : conv::ConvPath::kIm2col)
            << Describe(ConvOp(form, seed)) << " " << conv::ConvDirectionName(direction);
      } else {
        EXPECT_GT(choice->im2col_ms, 0.0F);
        EXPECT_EQ(choice->path,
                  conv::FasterPath(choice->cudnn_ms >= 0.0F ? std::optional<float>(choice->cudnn_ms)
                                                            : std::nullopt,
                                   choice->im2col_ms));
      }
    }
  }
}

std::string ModeName(const ::testing::TestParamInfo<const char*>& param) { return param.param; }
INSTANTIATE_TEST_SUITE_P(Modes, ConvPathParityTest,
                         ::testing::Values("im2col", "cudnn", "measured"), ModeName);

// The first run of a shape measures each direction once; later runs of the shape, by any kernel,
// take the cached choice; another shape measures again.
TEST_F(OpParityTest, TheMeasuredConvChoiceIsMadeOncePerShape) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const ConvPathEnvironment environment("measured");
  // Shapes no other test runs, so that this test's decisions are its own.
  const ConvForm first{.x = {5, 3, 13, 11}, .w = {7, 3, 3, 3}, .bias = true, .pads = {1, 1, 1, 1}};
  ConvForm second = first;
  second.x[0] = 6;
  conv::ConvChoiceCache& cache = conv::ConvChoiceCache::Global();
  const auto run = [&](const ConvForm& form) {
    uint64_t seed = 77;
    const OpCase op = ConvOp(form, seed);
    OpRunner cuda(op, tensor::DeviceKind::kCuda);
    const std::vector<Tensor> inputs = To(op.inputs, Device::Cuda(0));
    const std::vector<Tensor> outputs = cuda.Forward(inputs);
    cuda.ForwardBackward(inputs, {RandomTensor(outputs[0].shape(), 5).To(Device::Cuda(0))});
  };
  const size_t before = cache.decisions();
  run(first);
  EXPECT_EQ(cache.decisions(), before + 3);
  const conv::ConvShapeKey key = conv::ConvShapeKeyOf(GeometryOf(first), GemmMath::kFp32, 0);
  for (const conv::ConvDirection direction : kConvDirections) {
    const std::optional<conv::ConvChoice> choice =
        cache.Find(key, direction, conv::ConvPathMode::kMeasured);
    ASSERT_TRUE(choice.has_value()) << conv::ConvDirectionName(direction);
    EXPECT_GT(choice->im2col_ms, 0.0F) << conv::ConvDirectionName(direction);
    // cuDNN was timed too where the build has it (these shapes are within its descriptor).
    EXPECT_EQ(choice->cudnn_ms > 0.0F, detail::CudnnInBuild())
        << conv::ConvDirectionName(direction);
  }
  run(first);
  EXPECT_EQ(cache.decisions(), before + 3);
  run(second);
  EXPECT_EQ(cache.decisions(), before + 6);
}

}  // namespace
}  // namespace autodist::gpu
