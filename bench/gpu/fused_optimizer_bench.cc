// One fused optimizer step over many parameters on the GPU: milliseconds per step and the memory
// bandwidth it reaches. scripts/bench-gpu.sh runs it beside torch.optim's fused Adam
// (torch_fused_optimizer.py) on the same parameter layout, alternating the two.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "bench/gpu/gpu_bench.h"
#include "bench/gpu/parameter_layout.h"
#include "gpu/device/devices.h"
#include "gpu/device/stream.h"
#include "gpu/memory/device_pool.h"
#include "gpu/memory/pinned_buffer.h"
#include "gpu/optim/fused_optimizer.h"
#include "runtime/common/error.h"

namespace autodist::gpu {
namespace {

int Run(int argc, char** argv) {
  CLI::App app{"fused optimizer step on the GPU"};
  int64_t params = 100'000'000;
  std::string optimizer = "adam";
  int steps = 50;
  int warmup = 5;
  app.add_option("--params", params, "parameters in all")->check(CLI::PositiveNumber);
  app.add_option("--optimizer", optimizer, "sgd, adam, adamw, adagrad or rmsprop");
  app.add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  const GpuInventory gpus = RequireGpus("--device cuda", 1);
  UseGpu(0);
  const std::vector<int64_t> sizes = bench::ParameterLayout(params);
  DevicePool pool;
  Stream stream;
  std::vector<DeviceBuffer> values;
  std::vector<DeviceBuffer> grads;
  std::vector<DeviceVariable> variables;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t bytes = static_cast<size_t>(sizes[i]) * sizeof(float);
    PinnedBuffer host(bytes);
    for (int64_t k = 0; k < sizes[i]; ++k) host.as<float>()[k] = normal(rng) * 0.01F;
    values.push_back(pool.Allocate(bytes, stream.get()));
    grads.push_back(pool.Allocate(bytes, stream.get()));
    CopyAsync(values.back().data(), host.data(), bytes, stream.get(), "values");
    CopyAsync(grads.back().data(), host.data(), bytes, stream.get(), "gradients");
    stream.Synchronize();
    variables.push_back(DeviceVariable{
        fmt::format("p{}", i), {sizes[i]}, values.back().as<float>(), grads.back().as<float>()});
  }
  const auto fused = MakeFusedOptimizer(optim::ParseOptimizerOptions(optimizer, {{"lr", "0.001"}}),
                                        pool, stream.get());
  for (int i = 0; i < warmup; ++i) fused->Step(variables);
  const double ms = bench::MsPerRun(stream.get(), steps, [&] { fused->Step(variables); });
  // Adam reads value, gradient and two moments and writes value and moments: 7 floats a parameter.
  const double gb_per_s = static_cast<double>(params) * 7 * 4 / (ms * 1e6);

  // The ceiling: a device-to-device copy of the parameters' bytes, counted read + write.
  const size_t copy_bytes = static_cast<size_t>(params) * sizeof(float);
  DeviceBuffer from = pool.Allocate(copy_bytes, stream.get());
  DeviceBuffer to = pool.Allocate(copy_bytes, stream.get());
  CopyAsync(to.data(), from.data(), copy_bytes, stream.get(), "warming the copy");
  const double copy_ms = bench::MsPerRun(stream.get(), steps, [&] {
    CopyAsync(to.data(), from.data(), copy_bytes, stream.get(), "copy");
  });
  const double copy_gb_per_s = 2.0 * static_cast<double>(copy_bytes) / (copy_ms * 1e6);
  fmt::print(
      "{{\"impl\": \"autodist\", \"optimizer\": \"{}\", \"params\": {}, \"tensors\": {}, "
      "\"ms_per_step\": {:.4f}, \"adam_gb_per_s\": {:.1f}, \"copy_gb_per_s\": {:.1f}, "
      "\"device\": \"{}\"}}\n",
      optimizer, params, sizes.size(), ms, gb_per_s, copy_gb_per_s, gpus.gpus[0].name);
  return 0;
}

}  // namespace
}  // namespace autodist::gpu

int main(int argc, char** argv) {
  return autodist::bench::Main("fused_optimizer_bench", argc, argv, autodist::gpu::Run);
}
