// The fused optimizers on the device against the CPU optimizers (which match PyTorch, tests/optim):
// the same rules, compiled for both, so the results agree to the bit, give or take one unit in the
// last place where an FMA's single rounding and the CPU's emulation of it differ (the CPU rounds
// the exact double sum, which differs only when that sum lies halfway between two floats).
#include "gpu/optim/fused_optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/device/stream.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "gpu/memory/device_pool.h"
#include "gpu/memory/pinned_buffer.h"
#include "gpu/optim/cuda_optimizer.h"
#include "runtime/common/error.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/sparse_gradient.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using tensor::Tensor;
using ::testing::HasSubstr;

struct Config {
  std::string name;
  std::map<std::string, std::string> options;
};

// Every variant of every rule: each flag of each optimizer on and off.
std::vector<Config> AllConfigs() {
  std::vector<Config> configs;
  for (const std::string wd : {"0", "0.01"}) {
    configs.push_back({"sgd", {{"lr", "0.1"}, {"weight_decay", wd}}});
    configs.push_back({"sgd", {{"lr", "0.1"}, {"weight_decay", wd}, {"momentum", "0.9"}}});
    configs.push_back(
        {"sgd", {{"lr", "0.1"}, {"weight_decay", wd}, {"momentum", "0.9"}, {"dampening", "0.1"}}});
    configs.push_back(
        {"sgd", {{"lr", "0.1"}, {"weight_decay", wd}, {"momentum", "0.9"}, {"nesterov", "true"}}});
    for (const std::string name : {"adam", "adamw"}) {
      for (const std::string amsgrad : {"false", "true"}) {
        configs.push_back({name, {{"lr", "0.01"}, {"weight_decay", wd}, {"amsgrad", amsgrad}}});
      }
    }
    configs.push_back({"adagrad",
                       {{"lr", "0.1"},
                        {"weight_decay", wd},
                        {"lr_decay", "0.1"},
                        {"initial_accumulator_value", "0.1"}}});
    for (const std::string centered : {"false", "true"}) {
      for (const std::string momentum : {"0", "0.9"}) {
        configs.push_back({"rmsprop",
                           {{"lr", "0.01"},
                            {"weight_decay", wd},
                            {"centered", centered},
                            {"momentum", momentum}}});
      }
    }
  }
  return configs;
}

std::string Describe(const Config& config) {
  std::string out = config.name;
  for (const auto& [key, value] : config.options) out += " " + key + "=" + value;
  return out;
}

// Shapes that exercise the kernel's edges: a single element, sizes that are not multiples of the
// four-element vector, one chunk exactly and one element over, and several chunks.
const std::vector<tensor::Shape>& Shapes() {
  static const std::vector<tensor::Shape> shapes{
      {1}, {3}, {4}, {17}, {7, 13}, {16384}, {16385}, {100003}, {64, 1}, {3, 4, 5}, {2, 40000}};
  return shapes;
}

Tensor Random(const tensor::Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  Tensor out(tensor::DType::kFloat32, shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = normal(rng);
  return out;
}

// Variables held on the device and mirrored on the host.
class DeviceVariables {
 public:
  DeviceVariables(const std::vector<Tensor>& values, DevicePool& pool, cudaStream_t stream,
                  size_t misalign_floats)
      : stream_(stream), misalign_(misalign_floats) {
    for (size_t v = 0; v < values.size(); ++v) {
      const size_t bytes = values[v].nbytes() + misalign_ * sizeof(float);
      params_.push_back(pool.Allocate(bytes, stream));
      grads_.push_back(pool.Allocate(bytes, stream));
      CopyAsync(param(v), values[v].raw(), values[v].nbytes(), stream, "param");
      shapes_.push_back(values[v].shape());
    }
    CheckStream();
  }

  float* param(size_t v) { return params_[v].as<float>() + misalign_; }
  float* grad(size_t v) { return grads_[v].as<float>() + misalign_; }

  std::vector<DeviceVariable> Step(const std::vector<Tensor>& grads) {
    std::vector<DeviceVariable> out;
    for (size_t v = 0; v < grads.size(); ++v) {
      CopyAsync(grad(v), grads[v].raw(), grads[v].nbytes(), stream_, "grad");
      out.push_back(DeviceVariable{"v" + std::to_string(v), shapes_[v], param(v), grad(v)});
    }
    CheckStream();  // the host gradients may go once copied
    return out;
  }

  Tensor Value(size_t v) {
    Tensor out(tensor::DType::kFloat32, shapes_[v]);
    CopyAsync(out.raw(), param(v), out.nbytes(), stream_, "value");
    CheckStream();
    return out;
  }

 private:
  void CheckStream() { CheckCuda(cudaStreamSynchronize(stream_), "test stream"); }

  cudaStream_t stream_;
  size_t misalign_;
  std::vector<DeviceBuffer> params_;
  std::vector<DeviceBuffer> grads_;
  std::vector<tensor::Shape> shapes_;
};

// Compares two tensors element by element; returns the largest distance in ulps and counts the
// elements that differ at all.
void ExpectClose(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  int64_t worst = 0;
  int64_t differing = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const int64_t ulps = testing::UlpDistance(cpu.data<float>()[i], gpu.data<float>()[i]);
    worst = std::max(worst, ulps);
    differing += ulps == 0 ? 0 : 1;
  }
  EXPECT_LE(worst, 1) << what << ": " << differing << " of " << cpu.numel() << " differ";
  EXPECT_LE(differing * 10000, cpu.numel() + 10000)
      << what << ": " << differing << " of " << cpu.numel() << " elements differ";
}

// The same state slots on both backends, step counts equal and buffers as ExpectClose.
void ExpectSameState(const std::map<std::string, Tensor>& cpu_state,
                     const std::map<std::string, Tensor>& gpu_state, const std::string& what) {
  ASSERT_EQ(cpu_state.size(), gpu_state.size()) << what;
  for (const auto& [key, value] : cpu_state) {
    ASSERT_TRUE(gpu_state.contains(key)) << what << ": " << key;
    if (value.dtype() == tensor::DType::kInt64) {
      EXPECT_EQ(value.data<int64_t>()[0], gpu_state.at(key).data<int64_t>()[0]) << key;
    } else {
      ExpectClose(value, gpu_state.at(key), what + ", state " + key);
    }
  }
}

// Runs `steps` updates of every shape on both backends and compares values and state.
void RunBoth(const Config& config, int steps, size_t misalign_floats) {
  const std::string what = Describe(config);
  const optim::OptimizerOptions options = optim::ParseOptimizerOptions(config.name, config.options);
  std::mt19937 rng(17);
  std::vector<Tensor> cpu_values;
  for (const auto& shape : Shapes()) cpu_values.push_back(Random(shape, rng));

  DevicePool pool;
  Stream stream;
  DeviceVariables device(cpu_values, pool, stream.get(), misalign_floats);
  const std::unique_ptr<optim::Optimizer> cpu = optim::MakeOptimizer(options);
  const std::unique_ptr<FusedOptimizer> gpu = MakeFusedOptimizer(options, pool, stream.get());

  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> grads;
    for (const auto& shape : Shapes()) grads.push_back(Random(shape, rng));
    for (size_t v = 0; v < grads.size(); ++v) {
      cpu->Apply("v" + std::to_string(v), cpu_values[v], grads[v]);
    }
    gpu->Step(device.Step(grads));
  }
  for (size_t v = 0; v < cpu_values.size(); ++v) {
    ExpectClose(cpu_values[v], device.Value(v), what + ", variable v" + std::to_string(v));
  }
  ExpectSameState(cpu->SaveState(), gpu->SaveState(), what);
}

TEST(FusedOptimizerTest, EveryRuleMatchesTheCpuOptimizer) {
  AUTODIST_SKIP_WITHOUT_GPU();
  for (const Config& config : AllConfigs()) RunBoth(config, /*steps=*/5, /*misalign_floats=*/0);
}

TEST(FusedOptimizerTest, UnalignedVariablesTakeTheScalarPathWithTheSameResults) {
  AUTODIST_SKIP_WITHOUT_GPU();
  for (const Config& config : AllConfigs()) RunBoth(config, /*steps=*/3, /*misalign_floats=*/1);
}

TEST(FusedOptimizerTest, StateMovesBetweenBackendsAndTrainingContinuesAlike) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const optim::OptimizerOptions options =
      optim::ParseOptimizerOptions("adam", {{"lr", "0.01"}, {"amsgrad", "true"}});
  std::mt19937 rng(3);
  std::vector<Tensor> values{Random({1000}, rng)};
  DevicePool pool;
  Stream stream;
  DeviceVariables device(values, pool, stream.get(), 0);
  const auto cpu = optim::MakeOptimizer(options);
  for (int step = 0; step < 3; ++step) cpu->Apply("v0", values[0], Random({1000}, rng));
  // The CPU's state and values go to the device, then both take the same two steps.
  CopyAsync(device.param(0), values[0].raw(), values[0].nbytes(), stream.get(), "value");
  const auto gpu = MakeFusedOptimizer(options, pool, stream.get());
  gpu->LoadState(cpu->SaveState());
  for (int step = 0; step < 2; ++step) {
    const Tensor grad = Random({1000}, rng);
    cpu->Apply("v0", values[0], grad);
    gpu->Step(device.Step({grad}));
  }
  ExpectClose(values[0], device.Value(0), "after loading the CPU's state");
  EXPECT_EQ(gpu->SaveState().at("v0/step").data<int64_t>()[0], 5);
}

TEST(FusedOptimizerTest, StepsAfterTheFirstAllocateNothing) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const optim::OptimizerOptions options = optim::ParseOptimizerOptions("adam", {});
  std::mt19937 rng(5);
  std::vector<Tensor> values;
  for (const auto& shape : Shapes()) values.push_back(Random(shape, rng));
  DevicePool pool;
  Stream stream;
  DeviceVariables device(values, pool, stream.get(), 0);
  const auto gpu = MakeFusedOptimizer(options, pool, stream.get());
  std::vector<Tensor> grads;
  for (const auto& shape : Shapes()) grads.push_back(Random(shape, rng));
  gpu->Step(device.Step(grads));
  gpu->Step(device.Step(grads));
  stream.Synchronize();
  const uint64_t used = pool.used_bytes();
  for (int step = 0; step < 10; ++step) gpu->Step(device.Step(grads));
  stream.Synchronize();
  EXPECT_EQ(pool.used_bytes(), used);
}

TEST(FusedOptimizerTest, RefusesMismatchedShapesRepeatedNamesAndNullPointers) {
  AUTODIST_SKIP_WITHOUT_GPU();
  std::mt19937 rng(9);
  std::vector<Tensor> values{Random({8}, rng)};
  DevicePool pool;
  Stream stream;
  DeviceVariables device(values, pool, stream.get(), 0);
  const auto gpu = MakeFusedOptimizer(optim::ParseOptimizerOptions("adam", {}), pool, stream.get());
  gpu->Step(device.Step({Random({8}, rng)}));
  const auto message = [&](std::vector<DeviceVariable> variables) -> std::string {
    try {
      gpu->Step(variables);
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
      return error.what();
    }
    return "no error";
  };
  EXPECT_THAT(message({{"v0", {2, 4}, device.param(0), device.grad(0)}}),
              HasSubstr("state of 'v0' has shape [8] but the variable has shape [2, 4]"));
  EXPECT_THAT(message({{"v0", {8}, device.param(0), device.grad(0)},
                       {"v0", {8}, device.param(0), device.grad(0)}}),
              HasSubstr("variable 'v0' appears twice in one step"));
  EXPECT_THAT(message({{"w", {8}, device.param(0), nullptr}}),
              HasSubstr("variable 'w' has no gradient on the device"));
  // Refused steps changed nothing: the step count is still 1.
  EXPECT_EQ(gpu->SaveState().at("v0/step").data<int64_t>()[0], 1);
}

TEST(FusedOptimizerTest, RefusesStateTheCpuOptimizerRefuses) {
  AUTODIST_SKIP_WITHOUT_GPU();
  DevicePool pool;
  Stream stream;
  const auto gpu = MakeFusedOptimizer(optim::ParseOptimizerOptions("adam", {}), pool, stream.get());
  try {
    gpu->LoadState({{"w/momentum_buffer", Tensor::Full({2}, 0.0F)}});
    FAIL() << "loaded a slot adam does not keep";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("has slot 'momentum_buffer', which"));
  }
}

// Row-sparse gradients (embeddings) through the device optimizer against the CPU's ApplySparse:
// every rule, with lazy_sparse off (the densified gradient's update: every row moves or decays)
// and on (only the present rows), over steps whose rows differ, the first step's state created
// by a sparse update.
TEST(FusedOptimizerTest, SparseRowsUpdateAsOnTheCpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  InstallCudaOptimizers();
  const tensor::Shape shape{50, 7};
  for (Config config : AllConfigs()) {
    for (const std::string lazy : {"false", "true"}) {
      config.options["lazy_sparse"] = lazy;
      const std::string what = Describe(config);
      const optim::OptimizerOptions options =
          optim::ParseOptimizerOptions(config.name, config.options);
      std::mt19937 rng(5);
      Tensor cpu_value = Random(shape, rng);
      Tensor gpu_value = cpu_value.To(tensor::Device::Cuda(0));
      const auto cpu = optim::MakeOptimizer(options);
      const auto gpu = optim::MakeOptimizer(options, tensor::Device::Cuda(0));
      EXPECT_EQ(gpu->SparseUpdatesChangeOnlyPresentRows(),
                cpu->SparseUpdatesChangeOnlyPresentRows())
          << what;
      for (int step = 0; step < 4; ++step) {
        std::vector<int64_t> rows;
        for (int64_t r = step % 3; r < shape[0]; r += 3 + step) rows.push_back(r);
        tensor::SparseGradient grad;
        grad.dense_shape = shape;
        grad.indices = Tensor::FromVector<int64_t>({static_cast<int64_t>(rows.size())}, rows);
        grad.values = Random({static_cast<int64_t>(rows.size()), shape[1]}, rng);
        cpu->ApplySparse("table", cpu_value, grad);
        gpu->ApplySparse("table", gpu_value, tensor::SparseTo(grad, tensor::Device::Cuda(0)));
      }
      ExpectClose(cpu_value, gpu_value.To(tensor::Device::Cpu()), what + ", the table");
      ExpectSameState(cpu->SaveState(), gpu->SaveState(), what);
    }
  }
}

}  // namespace
}  // namespace autodist::gpu
