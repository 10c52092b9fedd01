// Top-k selection by magnitude on the GPU (gpu/compress/top_k_selection.h) at a fraction of a
// gradient's elements (issue 16: 1%), timed with CUDA events over repeated selections of the same
// normal values; bench/gpu/torch_topk.py times torch.topk on the same sizes. The positions come
// out ascending, as the compressor needs them. scripts/bench-gpu.sh runs both, alternating.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "bench/gpu/gpu_bench.h"
#include "gpu/compress/top_k_selection.h"
#include "gpu/device/cuda_error.h"
#include "gpu/device/devices.h"
#include "gpu/device/stream.h"
#include "gpu/memory/device_pool.h"
#include "runtime/common/error.h"
#include "runtime/compress/top_k.h"

namespace autodist::gpu {
namespace {

int Run(int argc, char** argv) {
  CLI::App app{"top-k selection by magnitude on the GPU"};
  int64_t elements = 25'000'000;
  double fraction = 0.01;
  int steps = 20;
  app.add_option("--elements", elements, "gradient elements")->check(CLI::PositiveNumber);
  app.add_option("--fraction", fraction, "share of the elements kept")->check(CLI::Range(0.0, 1.0));
  app.add_option("--steps", steps, "timed selections")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const GpuInventory gpus = RequireGpus("--device cuda", 1);
  UseGpu(0);
  DevicePool pool;
  Stream stream;
  const auto count = static_cast<size_t>(elements);
  const int64_t k = compress::TopKCount(fraction, elements);
  std::vector<float> host(count);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (float& value : host) value = normal(rng);
  DeviceBuffer values = pool.Allocate(count * sizeof(float), stream.get());
  DeviceBuffer indices =
      pool.Allocate(static_cast<size_t>(std::max<int64_t>(k, 1)) * 8, stream.get());
  CheckCuda(cudaMemcpyAsync(values.data(), host.data(), count * sizeof(float),
                            cudaMemcpyHostToDevice, stream.get()),
            "copying the values");
  TopKSelector selector(pool);
  const auto select = [&] {
    selector.SelectLargest(values.as<float>(), elements, k, indices.as<int64_t>(), stream.get());
  };
  select();  // warm-up: the scratch is allocated here
  const double ms = bench::MsPerRun(stream.get(), steps, select);
  fmt::print(
      "{{\"benchmark\": \"topk\", \"impl\": \"autodist\", \"elements\": {}, \"k\": {}, "
      "\"ms\": {:.4f}, \"device\": \"{}\"}}\n",
      elements, k, ms, gpus.gpus[0].name);
  return 0;
}

}  // namespace
}  // namespace autodist::gpu

int main(int argc, char** argv) {
  return autodist::bench::Main("top_k_bench", argc, argv, autodist::gpu::Run);
}
