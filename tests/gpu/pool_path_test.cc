// MaxPool's and AveragePool's two paths on CUDA (gpu/ops/pool_path.h, pool_choice.h): the rules of
// the choice without a GPU (these run in CI), then every pooling case with the path pinned to our
// kernels, pinned to cuDNN, and measured, against the CPU kernel (tests/gpu/op_parity_util.h).
#include "gpu/ops/pool_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "gpu/memory/cuda_tensor_memory.h"
#include "gpu/ops/cudnn_pool.h"
#include "runtime/ops/nn/pool.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/op_parity_util.h"
#include "tests/ops/op_test_util.h"
#include "tests/scoped_environment.h"

namespace autodist::gpu {
namespace {

using ops::testing::AttrInt;
using ops::testing::AttrInts;
using ops::testing::OpCase;
using ops::testing::OpRunner;
using ops::testing::RandomTensor;
using pool::PoolDirection;
using pool::PoolKind;
using pool::PoolPath;
using pool::PoolPathMode;
using tensor::Shape;
using tensor::Tensor;

constexpr std::array<PoolDirection, 2> kDirections{PoolDirection::kForward,
                                                   PoolDirection::kBackward};

// A 2-D pooling window over an input shape, from which both a node's attributes and the geometry
// the kernels resolve (for pool_path.h's keys) are made.
struct PoolForm {
  Shape x;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
  std::vector<int64_t> dilations = {1, 1};   // MaxPool only: AveragePool has none before opset 19
  bool ceil_mode = false;
};

// The CNN's 2x2 windows, overlapping windows over padding, windows apart, padding at a stride,
// dilation with ceil_mode, ceil_mode adding a column, and ceil_mode's last window past an end
// padding smaller than the begin one (adding no window).
std::vector<PoolForm> PoolForms() {
  return {
      {.x = {4, 8, 28, 28}, .kernel = {2, 2}, .strides = {2, 2}},
      {.x = {2, 3, 7, 6}, .kernel = {3, 3}, .pads = {1, 1, 1, 1}},
      {.x = {2, 3, 7, 9}, .kernel = {2, 2}, .strides = {3, 2}},
      {.x = {2, 3, 5, 5}, .kernel = {2, 2}, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
      {.x = {2, 2, 9, 10},
       .kernel = {2, 3},
       .strides = {2, 2},
       .dilations = {2, 1},
       .ceil_mode = true},
      {.x = {2, 2, 9, 10},
       .kernel = {3, 2},
       .strides = {2, 3},
       .pads = {1, 0, 1, 0},
       .ceil_mode = true},
      {.x = {1, 2, 6, 6},
       .kernel = {2, 2},
       .strides = {2, 2},
       .pads = {1, 1, 0, 0},
       .ceil_mode = true},
  };
}

bool Dilated(const PoolForm& form) { return form.dilations != std::vector<int64_t>{1, 1}; }

ops::nn::WindowGeometry GeometryOf(const PoolForm& form) {
  ops::nn::WindowAttributes attributes;
  attributes.kernel_shape = form.kernel;
  attributes.strides = form.strides;
  attributes.pads = form.pads;
  attributes.dilations = form.dilations;
  attributes.ceil_mode = form.ceil_mode;
  return ops::nn::ResolvePoolWindow(attributes, form.x, "pool");
}

// One node over `form`: MaxPool (kind kMax) or AveragePool, in a session that trains or not.
OpCase PoolOp(const PoolForm& form, PoolKind kind, bool training, Tensor x) {
  OpCase op{kind == PoolKind::kMax ? "MaxPool" : "AveragePool",
            {std::move(x)},
            {AttrInts("kernel_shape", form.kernel), AttrInts("strides", form.strides),
             AttrInts("pads", form.pads), AttrInt("ceil_mode", form.ceil_mode ? 1 : 0)}};
  if (kind == PoolKind::kMax) {
    op.attributes.push_back(AttrInts("dilations", form.dilations));
  } else {
    op.attributes.push_back(
        AttrInt("count_include_pad", kind == PoolKind::kAverageIncludingPadding ? 1 : 0));
  }
  op.training = training;
  return op;
}

// A pooling case and what the kernel's choice is made from.
struct PoolCase {
  OpCase op;
  PoolForm form;
  PoolKind kind = PoolKind::kMax;
  bool needs_argmax = false;
};

// Every form as MaxPool in a session that does not train (cuDNN may run its forward; backward
// after it finds the argmax again) and in one that trains, and without dilation as AveragePool
// with count_include_pad 0 and 1; then ties and a NaN (integer values) with and without the
// Indices output.
std::vector<PoolCase> PoolCases() {
  std::vector<PoolCase> cases;
  uint64_t seed = 2000;
  for (const PoolForm& form : PoolForms()) {
    for (const bool training : {false, true}) {
      cases.push_back({PoolOp(form, PoolKind::kMax, training, RandomTensor(form.x, seed++)), form,
                       PoolKind::kMax, training});
    }
    if (Dilated(form)) continue;
    for (const PoolKind kind :
         {PoolKind::kAverageExcludingPadding, PoolKind::kAverageIncludingPadding}) {
      cases.push_back({PoolOp(form, kind, true, RandomTensor(form.x, seed++)), form, kind, false});
    }
  }
  const PoolForm overlapping = PoolForms()[1];
  Tensor ties = RandomTensor(overlapping.x, seed++, 0.0F, 3.0F);
  for (int64_t i = 0; i < ties.numel(); ++i)
    ties.data<float>()[i] = std::floor(ties.data<float>()[i]);
  ties.data<float>()[17] = NAN;
  cases.push_back(
      {PoolOp(overlapping, PoolKind::kMax, false, ties), overlapping, PoolKind::kMax, false});
  OpCase with_indices = PoolOp(overlapping, PoolKind::kMax, false, ties);
  with_indices.num_outputs = 2;
  cases.push_back({with_indices, overlapping, PoolKind::kMax, true});
  return cases;
}

// The tolerance of a case on a path (|cuda - cpu| <= tolerance * max(1, |cpu|)). Our kernels are
// the CPU's own window math: identical. cuDNN's maximum is the same element's value (its
// gradient is always ours: the same argmax, the same sums), so MaxPool is identical on every
// path; cuDNN's means add a window's 4 to 9 taps, and a gradient's shares, in its own order and
// may divide rather than multiply by the inverse: within 1e-5 of values below 3.
float Tolerance(const PoolCase& c, PoolPathMode mode) {
  return c.kind == PoolKind::kMax || mode == PoolPathMode::kOurs ? 0.0F : 1e-5F;
}

class PoolPathEnvironment : public autodist::testing::ScopedEnvironment {
 public:
  explicit PoolPathEnvironment(const char* mode) : ScopedEnvironment(pool::kPoolPathEnv, mode) {}
};

TEST(PoolPathTest, ModesParseAndAnyOtherIsRefusedNamingTheVariable) {
  EXPECT_EQ(pool::ParsePoolPathMode(nullptr), PoolPathMode::kMeasured);
  EXPECT_EQ(pool::ParsePoolPathMode(""), PoolPathMode::kMeasured);
  EXPECT_EQ(pool::ParsePoolPathMode("measured"), PoolPathMode::kMeasured);
  EXPECT_EQ(pool::ParsePoolPathMode("ours"), PoolPathMode::kOurs);
  EXPECT_EQ(pool::ParsePoolPathMode("cudnn"), PoolPathMode::kCudnn);
  for (const PoolPathMode mode :
       {PoolPathMode::kMeasured, PoolPathMode::kOurs, PoolPathMode::kCudnn}) {
    EXPECT_EQ(pool::ParsePoolPathMode(std::string(pool::PoolPathModeName(mode)).c_str()), mode);
  }
  EXPECT_EQ(pool::PoolPathName(PoolPath::kOurs), "ours");
  EXPECT_EQ(pool::PoolPathName(PoolPath::kCudnn), "cudnn");
  try {
    pool::ParsePoolPathMode("im2col");
    FAIL() << "'im2col' was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(error.what(),
                 "environment variable AUTODIST_POOL_PATH: expected one of measured, ours, cudnn, "
                 "got 'im2col'");
  }
}

// Both kernels read the variable when made: a bad value fails there, before any GPU work (so this
// needs no GPU).
TEST(PoolPathTest, AKernelMadeWithABadModeSaysWhy) {
  const PoolPathEnvironment environment("fastest");
  const PoolForm form = PoolForms()[0];
  for (const PoolKind kind : {PoolKind::kMax, PoolKind::kAverageExcludingPadding}) {
    const OpCase op = PoolOp(form, kind, true, RandomTensor(form.x, 1));
    EXPECT_THAT([&] { OpRunner cuda(op, tensor::DeviceKind::kCuda); },
                ::testing::ThrowsMessage<Error>(::testing::HasSubstr(
                    "AUTODIST_POOL_PATH: expected one of measured, ours, cudnn, got 'fastest'")))
        << op.op_type;
  }
}

TEST(PoolPathTest, TheShapeKeyTellsEveryFieldApart) {
  const ops::nn::WindowGeometry base = GeometryOf(PoolForms()[1]);
  const pool::PoolShapeKey key = pool::PoolShapeKeyOf(PoolKind::kMax, 2, 3, base, 0);
  EXPECT_EQ(key, pool::PoolShapeKeyOf(PoolKind::kMax, 2, 3, base, 0));
  EXPECT_NE(key, pool::PoolShapeKeyOf(PoolKind::kMax, 2, 3, base, 1));
  EXPECT_NE(key, pool::PoolShapeKeyOf(PoolKind::kMax, 3, 3, base, 0));
  EXPECT_NE(key, pool::PoolShapeKeyOf(PoolKind::kMax, 2, 4, base, 0));
  EXPECT_NE(key, pool::PoolShapeKeyOf(PoolKind::kAverageExcludingPadding, 2, 3, base, 0));
  EXPECT_NE(pool::PoolShapeKeyOf(PoolKind::kAverageExcludingPadding, 2, 3, base, 0),
            pool::PoolShapeKeyOf(PoolKind::kAverageIncludingPadding, 2, 3, base, 0));
  // Each of the window's fields, changed alone, makes another key.
  const std::vector<std::function<void(ops::nn::WindowGeometry&)>> changes{
      [](auto& g) { ++g.in_h; },       [](auto& g) { ++g.in_w; },
      [](auto& g) { ++g.out_h; },      [](auto& g) { ++g.out_w; },
      [](auto& g) { ++g.kernel_h; },   [](auto& g) { ++g.kernel_w; },
      [](auto& g) { ++g.stride_h; },   [](auto& g) { ++g.stride_w; },
      [](auto& g) { ++g.pad_top; },    [](auto& g) { ++g.pad_left; },
      [](auto& g) { ++g.pad_bottom; }, [](auto& g) { ++g.pad_right; },
      [](auto& g) { ++g.dilation_h; }, [](auto& g) { ++g.dilation_w; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    ops::nn::WindowGeometry changed = base;
    changes[i](changed);
    EXPECT_NE(key, pool::PoolShapeKeyOf(PoolKind::kMax, 2, 3, changed, 0)) << "change " << i;
  }
}

TEST(PoolPathTest, CudnnDescribesOnlyTheWindowsTheCpuComputes) {
  const std::vector<PoolForm> forms = PoolForms();
  const auto describes = [&](PoolKind kind, const PoolForm& form) {
    return pool::CudnnDescribesPool(kind, form.x[0], form.x[1], GeometryOf(form));
  };
  for (const PoolKind kind :
       {PoolKind::kMax, PoolKind::kAverageExcludingPadding, PoolKind::kAverageIncludingPadding}) {
    SCOPED_TRACE(std::string(pool::PoolKindName(kind)));
    EXPECT_TRUE(describes(kind, forms[0]));   // 2x2 tiles
    EXPECT_TRUE(describes(kind, forms[1]));   // padding 1 all round
    EXPECT_TRUE(describes(kind, forms[2]));   // windows apart
    EXPECT_TRUE(describes(kind, forms[3]));   // padding at a stride
    EXPECT_FALSE(describes(kind, forms[4]));  // dilation: cuDNN's descriptor has none
    // ceil_mode adds a column (cuDNN floors): not cuDNN's.
    EXPECT_FALSE(describes(kind, forms[5]));
    // A padding as large as the window: a window could hold no input element.
    PoolForm wide = forms[1];
    wide.pads = {3, 3, 3, 3};
    EXPECT_FALSE(describes(kind, wide));
    // No planes.
    PoolForm empty = forms[0];
    empty.x[0] = 0;
    EXPECT_FALSE(describes(kind, empty));
  }
  // ceil_mode with an end padding of 0 against a begin padding of 1 makes the windows cuDNN's
  // symmetric padding makes, but the last one runs past the end padding: the CPU's mean over the
  // padded window divides by its clipped size there, cuDNN by the whole window.
  const ops::nn::WindowGeometry past = GeometryOf(forms[6]);
  EXPECT_NE(past.pad_top, past.pad_bottom);
  EXPECT_TRUE(describes(PoolKind::kMax, forms[6]));
  EXPECT_TRUE(describes(PoolKind::kAverageExcludingPadding, forms[6]));
  EXPECT_FALSE(describes(PoolKind::kAverageIncludingPadding, forms[6]));
  // Uneven padding that adds no window, in floor mode: every kind.
  PoolForm uneven{.x = {1, 1, 6, 6}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {2, 2, 1, 1}};
  EXPECT_TRUE(describes(PoolKind::kAverageIncludingPadding, uneven));
  // Uneven padding that adds one.
  uneven.pads = {0, 0, 2, 2};
  EXPECT_FALSE(describes(PoolKind::kMax, uneven));
}

TEST(PoolPathTest, MaxPoolBackwardAndAnArgmaxStayOnOurKernel) {
  for (const PoolKind kind :
       {PoolKind::kAverageExcludingPadding, PoolKind::kAverageIncludingPadding}) {
    for (const PoolDirection direction : kDirections) {
      EXPECT_TRUE(pool::CudnnMayTake(kind, direction, false));
      EXPECT_TRUE(pool::CudnnMayTake(kind, direction, true));
    }
  }
  EXPECT_TRUE(pool::CudnnMayTake(PoolKind::kMax, PoolDirection::kForward, false));
  EXPECT_FALSE(pool::CudnnMayTake(PoolKind::kMax, PoolDirection::kForward, true));
  EXPECT_FALSE(pool::CudnnMayTake(PoolKind::kMax, PoolDirection::kBackward, false));
  EXPECT_FALSE(pool::CudnnMayTake(PoolKind::kMax, PoolDirection::kBackward, true));
}

TEST(PoolPathTest, TheMeasuredChoiceIsTheFasterPathAndATieKeepsOurs) {
  EXPECT_EQ(pool::FasterPoolPath(std::nullopt, 5.0F), PoolPath::kOurs);
  EXPECT_EQ(pool::FasterPoolPath(1.0F, 5.0F), PoolPath::kCudnn);
  EXPECT_EQ(pool::FasterPoolPath(5.0F, 1.0F), PoolPath::kOurs);
  EXPECT_EQ(pool::FasterPoolPath(2.0F, 2.0F), PoolPath::kOurs);
}

TEST(PoolPathTest, TheCacheDecidesOncePerShapeDirectionAndMode) {
  pool::PoolChoiceCache cache;
  int decided = 0;
  const auto decide = [&] {
    ++decided;
    pool::PoolChoice choice;
    choice.path = PoolPath::kCudnn;
    choice.cudnn_ms = static_cast<float>(decided);
    return choice;
  };
  const pool::PoolShapeKey key =
      pool::PoolShapeKeyOf(PoolKind::kAverageExcludingPadding, 2, 3, GeometryOf(PoolForms()[1]), 0);
  pool::PoolShapeKey other = key;
  ++other.batch;
  const auto measured = PoolPathMode::kMeasured;
  EXPECT_FALSE(cache.Find(key, PoolDirection::kForward, measured).has_value());
  EXPECT_EQ(cache.ChooseOnce(key, PoolDirection::kForward, measured, decide).cudnn_ms, 1.0F);
  EXPECT_EQ(cache.ChooseOnce(key, PoolDirection::kForward, measured, decide).cudnn_ms, 1.0F);
  EXPECT_EQ(decided, 1);
  ASSERT_TRUE(cache.Find(key, PoolDirection::kForward, measured).has_value());
  EXPECT_EQ(cache.Find(key, PoolDirection::kForward, measured)->path, PoolPath::kCudnn);
  cache.ChooseOnce(key, PoolDirection::kBackward, measured, decide);
  cache.ChooseOnce(key, PoolDirection::kForward, PoolPathMode::kCudnn, decide);
  cache.ChooseOnce(other, PoolDirection::kForward, measured, decide);
  EXPECT_EQ(decided, 4);
  EXPECT_EQ(cache.decisions(), 4U);
  EXPECT_FALSE(cache.Find(other, PoolDirection::kBackward, measured).has_value());
}

// cuDNN's path before it touches a device: what it does not take is refused, asked of no GPU.
TEST(PoolPathTest, WhatCudnnDoesNotTakeIsRefusedWithoutAGpu) {
  const PoolForm dilated = PoolForms()[4];
  const ops::nn::WindowGeometry g = GeometryOf(dilated);
  const PoolForm plain = PoolForms()[1];
  const ops::nn::WindowGeometry plain_g = GeometryOf(plain);
  const std::string node = "MaxPool node 'pool'";
  const detail::CudnnPoolCall call{.kind = PoolKind::kMax,
                                   .batch = dilated.x[0],
                                   .channels = dilated.x[1],
                                   .window = &g,
                                   .node = &node};
  EXPECT_FALSE(detail::RunCudnnPool(PoolDirection::kForward, call));
  detail::CudnnPoolCall argmax = call;
  argmax.window = &plain_g;
  argmax.batch = plain.x[0];
  argmax.channels = plain.x[1];
  argmax.needs_argmax = true;
  EXPECT_FALSE(detail::RunCudnnPool(PoolDirection::kForward, argmax));
  argmax.needs_argmax = false;
  EXPECT_FALSE(detail::RunCudnnPool(PoolDirection::kBackward, argmax));
}

// Where cuDNN cannot start (here: no usable driver), its path fails as an autodist error naming
// the node, not a crash. On a GPU machine PoolPathParityTest runs the path instead.
TEST(PoolPathTest, CudnnThatCannotStartIsAnErrorNamingTheNode) {
  if (!DiscoverGpus().gpus.empty()) GTEST_SKIP() << "checks the failure where no GPU is usable";
  if (!detail::CudnnInBuild()) GTEST_SKIP() << "this build has no cuDNN";
  const PoolForm form = PoolForms()[0];
  const ops::nn::WindowGeometry g = GeometryOf(form);
  const std::string node = "AveragePool node 'first'";
  const detail::CudnnPoolCall call{.kind = PoolKind::kAverageExcludingPadding,
                                   .batch = form.x[0],
                                   .channels = form.x[1],
                                   .window = &g,
                                   .node = &node};
  try {
    detail::RunCudnnPool(PoolDirection::kForward, call);
    FAIL() << "cuDNN started without a usable GPU";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(error.what(),
                ::testing::StartsWith("AveragePool node 'first': cuDNN's handle on GPU 0: "));
  }
}

// The cases themselves, on the CPU alone (and so in CI, without a GPU): each is an input the CPU
// kernel takes, so a GPU run spends no time on a case that is wrong.
TEST(PoolPathTest, EveryCaseRunsOnTheCpu) {
  for (const PoolCase& c : PoolCases()) {
    SCOPED_TRACE(parity::Describe(c.op));
    OpRunner cpu(c.op);
    const std::vector<Tensor> outputs = cpu.Forward(c.op.inputs);
    ASSERT_EQ(outputs.size(), c.op.num_outputs);
    EXPECT_EQ(outputs[0].shape(), (Shape{c.form.x[0], c.form.x[1], GeometryOf(c.form).out_h,
                                         GeometryOf(c.form).out_w}));
    std::vector<Tensor> grads;
    for (size_t o = 0; o < outputs.size(); ++o) {
      grads.push_back(RandomTensor(outputs[o].shape(), 500 + o, -1.0F, 1.0F));
    }
    EXPECT_EQ(cpu.ForwardBackward(c.op.inputs, grads).input_grads.size(), 1U);
  }
}

class PoolPathParityTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { InstallCudaTensorMemory(); }
};

// Every pooling case with the path pinned (or measured), forward and backward against the CPU
// within Tolerance, and the cache saying which path ran: cuDNN wherever it may take the direction
// and describes the shape when pinned to it, our kernel elsewhere; when measured, both timed
// there (printed, for the device run's log).
TEST_P(PoolPathParityTest, ForwardAndBackwardMatchTheCpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const PoolPathMode mode = pool::ParsePoolPathMode(GetParam());
  if (mode == PoolPathMode::kCudnn && !detail::CudnnInBuild()) {
    GTEST_SKIP() << "this build has no cuDNN";
  }
  const PoolPathEnvironment environment(GetParam());
  for (const PoolCase& c : PoolCases()) {
    const std::string what = parity::Describe(c.op) + " " + GetParam();
    parity::ExpectParity({c.op, Tolerance(c, mode)});
    if (mode == PoolPathMode::kOurs) continue;
    const ops::nn::WindowGeometry g = GeometryOf(c.form);
    const pool::PoolShapeKey key = pool::PoolShapeKeyOf(c.kind, c.form.x[0], c.form.x[1], g, 0);
    const bool described = pool::CudnnDescribesPool(c.kind, c.form.x[0], c.form.x[1], g);
    for (const PoolDirection direction : kDirections) {
      if (!pool::CudnnMayTake(c.kind, direction, c.needs_argmax)) continue;
      const std::optional<pool::PoolChoice> choice =
          pool::PoolChoiceCache::Global().Find(key, direction, mode);
      ASSERT_TRUE(choice.has_value()) << what << " " << pool::PoolDirectionName(direction);
      if (mode == PoolPathMode::kCudnn) {
        EXPECT_EQ(choice->path, described ? PoolPath::kCudnn : PoolPath::kOurs)
            << what << " " << pool::PoolDirectionName(direction);
        continue;
      }
      EXPECT_EQ(choice->ours_ms > 0.0F, described) << what;
      EXPECT_EQ(choice->cudnn_ms > 0.0F, described) << what;
      EXPECT_EQ(choice->path, described ? pool::FasterPoolPath(choice->cudnn_ms, choice->ours_ms)
                                        : PoolPath::kOurs)
          << what;
      std::cout << what << " " << pool::PoolDirectionName(direction) << ": "
                << pool::PoolPathName(choice->path) << " (ours " << choice->ours_ms << " ms, cudnn "
                << choice->cudnn_ms << " ms)\n";
    }
  }
}

std::string ModeName(const ::testing::TestParamInfo<const char*>& param) { return param.param; }
INSTANTIATE_TEST_SUITE_P(Modes, PoolPathParityTest, ::testing::Values("ours", "cudnn", "measured"),
                         ModeName);

// The first run of a shape measures each direction once; later runs of the shape, by any kernel,
// take the cached choice; another shape measures again.
TEST(PoolPathDeviceTest, TheMeasuredChoiceIsMadeOncePerShapeAndDirection) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  const PoolPathEnvironment environment("measured");
  // Shapes no other test runs, so that this test's decisions are its own.
  PoolForm first{.x = {5, 3, 13, 11}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}};
  PoolForm second = first;
  second.x[0] = 6;
  pool::PoolChoiceCache& cache = pool::PoolChoiceCache::Global();
  const auto run = [&](const PoolForm& form) {
    const OpCase op =
        PoolOp(form, PoolKind::kAverageIncludingPadding, true, RandomTensor(form.x, 77));
    OpRunner cuda(op, tensor::DeviceKind::kCuda);
    const std::vector<Tensor> inputs = parity::To(op.inputs, tensor::Device::Cuda(0));
    const std::vector<Tensor> outputs = cuda.Forward(inputs);
    cuda.ForwardBackward(inputs, {RandomTensor(outputs[0].shape(), 5).To(tensor::Device::Cuda(0))});
  };
  const size_t before = cache.decisions();
  run(first);
  EXPECT_EQ(cache.decisions(), before + 2);
  const pool::PoolShapeKey key = pool::PoolShapeKeyOf(PoolKind::kAverageIncludingPadding,
                                                      first.x[0], first.x[1], GeometryOf(first), 0);
  for (const PoolDirection direction : kDirections) {
    const std::optional<pool::PoolChoice> choice =
        cache.Find(key, direction, PoolPathMode::kMeasured);
    ASSERT_TRUE(choice.has_value()) << pool::PoolDirectionName(direction);
    // Both timed where the build has cuDNN (the shape is within its descriptor).
    EXPECT_EQ(choice->ours_ms > 0.0F, detail::CudnnInBuild()) << pool::PoolDirectionName(direction);
    EXPECT_EQ(choice->cudnn_ms > 0.0F, detail::CudnnInBuild())
        << pool::PoolDirectionName(direction);
  }
  run(first);
  EXPECT_EQ(cache.decisions(), before + 2);
  run(second);
  EXPECT_EQ(cache.decisions(), before + 4);
}

}  // namespace
}  // namespace autodist::gpu
