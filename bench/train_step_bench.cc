// Training-step throughput of the engine: forward + backward + SGD-momentum update of an ONNX
// model on random data of a given batch size. bench/pytorch_train_step.py measures the same
// for PyTorch; scripts/bench-train.sh runs both side by side and prints the ratio.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <random>

#include "runtime/common/file_io.h"
#include "runtime/exec/session.h"
#include "runtime/exec/trainer.h"
#include "runtime/ops/parallel.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/storage.h"

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

int main(int argc, char** argv) {
  CLI::App app{"Training-step throughput of the engine"};
  std::string model_path;
  int64_t batch = 64;
  int steps = 50;
  int warmup = 5;
  int threads = 0;
  app.add_option("--model", model_path, "ONNX model (loss inside)")->required();
  app.add_option("--batch-size", batch)->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "Timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "Untimed steps first");
  app.add_option("--threads", threads, "Compute threads (0: all cores)");
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) autodist::ops::SetNumThreads(threads);
  autodist::tensor::ConfigureTensorPool(
      autodist::tensor::ParseTensorPoolOptions(std::getenv(autodist::tensor::kTensorPoolEnv)));

  onnx::ModelProto model;
  if (!model.ParseFromString(autodist::ReadFileBytes(model_path, "model"))) return 2;
  autodist::exec::Session session(model, model_path, {});
  auto optimizer = autodist::optim::MakeOptimizer(
      autodist::optim::ParseOptimizerOptions("sgd", {{"lr", "0.01"}, {"momentum", "0.9"}}));
  std::mt19937_64 engine(0);
  // A few distinct batches, cycled, so data generation stays out of the timing.
  std::vector<autodist::exec::Feeds> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(RandomFeeds(session, batch, engine));

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
  fmt::print("steps_per_second={:.3f} peak_rss_mb={:.1f}\n", steps / seconds,
             static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}
