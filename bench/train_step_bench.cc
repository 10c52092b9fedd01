// Training-step throughput of the engine: forward + backward + SGD-momentum update of an ONNX
// model on random data of a given batch size, on the CPU or (built with the CUDA backend,
// --device cuda) on GPU 0. bench/pytorch_train_step.py measures the same for PyTorch;
// scripts/bench-train.sh (CPU) and scripts/bench-gpu.sh (GPU) run both side by side and print
// the ratio.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <random>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/exec/session.h"
#include "runtime/exec/trainer.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/precision.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/storage.h"
#ifdef AUTODIST_WITH_CUDA
#include "gpu/device/devices.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "gpu/optim/cuda_optimizer.h"
#endif

namespace {

using autodist::tensor::DType;
using autodist::tensor::Tensor;

autodist::exec::Feeds RandomFeeds(const autodist::exec::Session& session, int64_t batch,
                                  std::mt19937_64& engine) {
  autodist::exec::Feeds feeds;
  for (const auto& spec : session.inputs()) {
    std::vector<int64_t> shape = spec.shape;
    shape[0] = batch;
    Tensor t(spec.dtype, shape);
    if (spec.dtype == DType::kFloat32) {
      std::uniform_real_distribution<float> dist(0.0F, 1.0F);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(engine);
    } else {
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<int64_t>()[i] = static_cast<int64_t>(engine() % 10);
    }
    feeds[spec.name] = t;
  }
  return feeds;
}

}  // namespace

namespace {

int Run(int argc, char** argv) {
  CLI::App app{"Training-step throughput of the engine"};
  std::string model_path;
  int64_t batch = 64;
  int steps = 50;
  int warmup = 5;
  int threads = 0;
  std::string device_name = "cpu";
  std::string precision_name = "fp32";
  app.add_option("--model", model_path, "ONNX model (loss inside)")->required();
  app.add_option("--precision", precision_name,
                 "Matrix products in fp32, or on a GPU tf32 or bf16 (mixed precision)");
  app.add_option("--device", device_name, "cpu or cuda (GPU 0; builds with the CUDA backend)");
  app.add_option("--batch-size", batch)->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "Timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "Untimed steps first");
  app.add_option("--threads", threads, "Compute threads (0: all cores)");
  bool no_fusion = false;
  app.add_flag(
      "--no-fusion", no_fusion,
      "Plan every node as its own step (no Gemm -> Relu or MatMul -> Add fusion): the fused plan's "
      "reference");
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) autodist::ops::SetNumThreads(threads);
  autodist::tensor::ConfigureTensorPool(
      autodist::tensor::ParseTensorPoolOptions(std::getenv(autodist::tensor::kTensorPoolEnv)));

  const autodist::tensor::Device device = autodist::tensor::ParseDevice(device_name, "--device");
  if (!device.is_cpu()) {
#ifdef AUTODIST_WITH_CUDA
    autodist::gpu::RequireGpus("--device", device.index + 1);
    autodist::gpu::InstallCudaTensorMemory();
    autodist::gpu::InstallCudaOptimizers();
#else
    fmt::print(stderr, "--device {}: this build has no CUDA backend\n", device_name);
    return 2;
#endif
  }

  onnx::ModelProto model;
  if (!model.ParseFromString(autodist::ReadFileBytes(model_path, "model"))) return 2;
  autodist::exec::SessionOptions session_options;
  session_options.device = device;
  session_options.precision = autodist::ops::ParsePrecision(precision_name, "--precision");
  session_options.fuse_activations = !no_fusion;
  autodist::exec::Session session(model, model_path, session_options);
  auto optimizer = autodist::optim::MakeOptimizer(
      autodist::optim::ParseOptimizerOptions("sgd", {{"lr", "0.01"}, {"momentum", "0.9"}}), device);
  std::mt19937_64 engine(0);
  // A few distinct batches, cycled, so data generation stays out of the timing.
  constexpr int kBatches = 4;
  std::vector<autodist::exec::Feeds> batches;
  batches.reserve(kBatches);
  for (int i = 0; i < kBatches; ++i) batches.push_back(RandomFeeds(session, batch, engine));

  const auto step = [&](int i) {
    auto result = session.ForwardBackward(batches[static_cast<size_t>(i) % batches.size()]);
    autodist::exec::ApplyGradients(result.gradients, session, *optimizer);
  };
  for (int i = 0; i < warmup; ++i) step(i);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step(i);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // Each step reads its loss on the host, so the device has finished when the clock stops.
  std::string device_memory;
#ifdef AUTODIST_WITH_CUDA
  if (!device.is_cpu()) {
    // Tensors' peak (PyTorch's max_memory_allocated) and the pool's, buffer cache included
    // (PyTorch's max_memory_reserved).
    device_memory = fmt::format(
        " peak_device_mb={:.1f} peak_reserved_mb={:.1f}",
        static_cast<double>(autodist::gpu::TensorMemory(device.index).peak_live_bytes) / 1048576.0,
        static_cast<double>(autodist::gpu::TensorPool(device.index).peak_used_bytes()) / 1048576.0);
  }
#endif
  fmt::print("steps_per_second={:.3f} peak_rss_mb={:.1f}{}\n", steps / seconds,
             static_cast<double>(usage.ru_maxrss) / 1024.0, device_memory);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const autodist::Error& error) {
    fmt::print(stderr, "train_step_bench: {}\n", error.what());
    return error.IsUserError() ? 2 : 1;
  }
}
