// PowerSGD's compress + decompress on the GPU (gpu/compress/powersgd_device.h) over the gradient
// shapes of the Fashion-MNIST MLP and CNN that PowerSGD compresses, one rank (no all-reduce): per
// step each matrix gets the residual added, P = M Q, P orthonormalized, Q = M^T P, M = P Q^T and
// the new residual. bench/gpu/torch_powersgd.py times PyTorch's powerSGD_hook math on the same
// shapes; scripts/bench-gpu.sh runs both, alternating (issue 16's target: at least 1.0x).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "bench/gpu/gpu_bench.h"
#include "gpu/compress/powersgd_device.h"
#include "gpu/device/cuda_error.h"
#include "gpu/device/devices.h"
#include "gpu/device/stream.h"
#include "gpu/memory/device_pool.h"
#include "runtime/common/error.h"

namespace autodist::gpu {
namespace {

struct MatrixShape {
  int64_t n;
  int64_t m;
};

// The weight gradients of the MLP (256x784, 128x256, 10x128) and the CNN (conv1 32x9, conv2
// 64x288, fc1 128x3136, fc2 10x128), as the compressor views them (first dimension by the rest);
// those with r(n + m) >= nm are left out, as the compressor sends them uncompressed.
const MatrixShape kShapes[] = {{256, 784}, {128, 256},  {10, 128}, {32, 9},
                               {64, 288},  {128, 3136}, {10, 128}};

int Run(int argc, char** argv) {
  CLI::App app{"PowerSGD compress + decompress on the GPU"};
  int64_t rank = 1;
  int steps = 100;
  app.add_option("--rank", rank, "PowerSGD's rank")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const GpuInventory gpus = RequireGpus("--device cuda", 1);
  UseGpu(0);
  DevicePool pool;
  Stream stream;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  struct Matrix {
    MatrixShape shape;
    DeviceBuffer m, residual, p, q;
  };
  std::vector<Matrix> matrices;
  const auto fill = [&](DeviceBuffer& buffer, size_t count, float scale) {
    std::vector<float> host(count);
    for (float& v : host) v = normal(rng) * scale;
    CheckCuda(cudaMemcpyAsync(buffer.data(), host.data(), count * sizeof(float),
                              cudaMemcpyHostToDevice, stream.get()),
              "filling a matrix");
    stream.Synchronize();
  };
  for (const MatrixShape& shape : kShapes) {
    if (rank * (shape.n + shape.m) >= shape.n * shape.m) continue;  // not compressed
    const auto elements = static_cast<size_t>(shape.n * shape.m);
    Matrix matrix{shape, pool.Allocate(elements * 4, stream.get()),
                  pool.Allocate(elements * 4, stream.get()),
                  pool.Allocate(static_cast<size_t>(shape.n * rank) * 4, stream.get()),
                  pool.Allocate(static_cast<size_t>(shape.m * rank) * 4, stream.get())};
    fill(matrix.m, elements, 0.01F);
    fill(matrix.residual, elements, 0.0F);
    fill(matrix.q, static_cast<size_t>(shape.m * rank), 1.0F);
    matrices.push_back(std::move(matrix));
  }
  const auto step = [&] {
    for (Matrix& x : matrices) {
      const auto [n, m] = x.shape;
      ProjectOnDevice(x.m.as<float>(), x.residual.as<float>(), n, m, x.q.as<float>(), rank,
                      x.p.as<float>(), 0, stream.get());
      OrthonormalizeColumnsOnDevice(x.p.as<float>(), n, rank, 1e-5, pool, stream.get());
      ReprojectOnDevice(x.m.as<float>(), n, m, x.p.as<float>(), rank, x.q.as<float>(), 0,
                        stream.get());
      DecompressOnDevice(x.m.as<float>(), x.residual.as<float>(), n, m, x.p.as<float>(),
                         x.q.as<float>(), rank, 1, 0, stream.get());
    }
  };
  for (int i = 0; i < 5; ++i) step();  // warm-up: cuBLASLt's plans are made here
  const double ms = bench::MsPerRun(stream.get(), steps, step);
  fmt::print(
      "{{\"benchmark\": \"powersgd\", \"impl\": \"autodist\", \"rank\": {}, \"matrices\": {}, "
      "\"ms_per_step\": {:.4f}, \"device\": \"{}\"}}\n",
      rank, matrices.size(), ms, gpus.gpus[0].name);
  return 0;
}

}  // namespace
}  // namespace autodist::gpu

int main(int argc, char** argv) {
  return autodist::bench::Main("powersgd_bench", argc, argv, autodist::gpu::Run);
}
