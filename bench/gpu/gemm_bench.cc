// Our whole Gemm op on the GPU (the CUDA kernel as the engine runs it: registry, contexts, the
// output allocated from the pool, cuBLASLt with the bias epilogue) against a bare cuBLASLt call
// with the same epilogue and cuBLASLt's first heuristic choice (ours times cuBLASLt's candidates
// on a shape's first call and keeps the fastest, gpu/blas/matmul.cc), on the Fashion-MNIST MLP's
// layer shapes at batch 256 and two larger squares. Prints one JSON line per shape: microseconds
// per call of each and bare / ours.
#include <cublasLt.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <CLI/CLI.hpp>
#include <random>
#include <vector>

#include "bench/gpu/gpu_bench.h"
#include "gpu/device/devices.h"
#include "gpu/device/stream.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"
#include "runtime/ops/registry.h"

namespace autodist::gpu {
namespace {

using tensor::Device;
using tensor::Tensor;

struct Shape3 {
  int64_t m;
  int64_t n;
  int64_t k;
};

void Check(cublasStatus_t status, const char* what) {
  AD_CHECK(status == CUBLAS_STATUS_SUCCESS, kInternal, "bare cuBLASLt {}: status {}", what,
           static_cast<int>(status));
}

Tensor Random(const tensor::Shape& shape, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  Tensor t(tensor::DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(engine);
  return t.To(Device::Cuda(0));
}

// Microseconds per call of `call`, over `iterations` calls after 10 warm-up calls.
template <typename Call>
double TimeUs(cudaStream_t stream, int iterations, Call&& call) {
  for (int i = 0; i < 10; ++i) call();
  return bench::MsPerRun(stream, iterations, call) * 1000.0;
}

// Y[m, n] = X[m, k] W[n, k]^T + bias[n]: a Linear layer, as our op computes it.
double OursUs(const Shape3& s, const Tensor& x, const Tensor& w, const Tensor& bias,
              cudaStream_t stream, int iterations) {
  onnx::NodeProto proto;
  proto.set_op_type("Gemm");
  proto.set_name("bench");
  for (const char* input : {"x", "w", "b"}) proto.add_input(input);
  proto.add_output("y");
  auto* trans_b = proto.add_attribute();
  trans_b->set_name("transB");
  trans_b->set_type(onnx::AttributeProto::INT);
  trans_b->set_i(1);
  const ops::NodeInfo node(proto, 17);
  const auto kernel = ops::KernelRegistry::Global().Create(node, tensor::DeviceKind::kCuda);
  std::mt19937_64 rng(1);
  (void)s;
  return TimeUs(stream, iterations, [&] {
    ops::ForwardContext ctx({&x, &w, &bias}, 1, true, &rng, &node);
    kernel->Forward(ctx);
  });
}

double BareUs(const Shape3& s, const Tensor& x, const Tensor& w, const Tensor& bias,
              cudaStream_t stream, int iterations) {
  cublasLtHandle_t handle = nullptr;
  Check(cublasLtCreate(&handle), "create");
  cublasLtMatmulDesc_t desc = nullptr;
  Check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  const cublasOperation_t trans = CUBLAS_OP_T;
  const cublasOperation_t none = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none);
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  const void* bias_pointer = bias.device_data<float>();
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                 sizeof bias_pointer);
  // Column-major: Y^T [n, m] = W [n, k] (stored as [k, n], transposed) X^T [k, m].
  cublasLtMatrixLayout_t lw = nullptr;
  cublasLtMatrixLayout_t lx = nullptr;
  cublasLtMatrixLayout_t ly = nullptr;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  Check(cublasLtMatrixLayoutCreate(&lw, CUDA_R_32F, u(s.k), u(s.n), s.k), "layout");
  Check(cublasLtMatrixLayoutCreate(&lx, CUDA_R_32F, u(s.k), u(s.m), s.k), "layout");
  Check(cublasLtMatrixLayoutCreate(&ly, CUDA_R_32F, u(s.n), u(s.m), s.n), "layout");
  const size_t workspace_bytes = size_t{32} << 20;
  void* workspace = nullptr;
  cudaMalloc(&workspace, workspace_bytes);
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulPreferenceCreate(&preference);
  const uint64_t max_workspace = workspace_bytes;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &max_workspace, sizeof max_workspace);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  Check(
      cublasLtMatmulAlgoGetHeuristic(handle, desc, lw, lx, ly, ly, preference, 1, &result, &found),
      "heuristic");
  AD_CHECK(found > 0, kInternal, "bare cuBLASLt found no algorithm");
  void* y = nullptr;
  cudaMalloc(&y, static_cast<size_t>(s.m * s.n) * sizeof(float));
  const float alpha = 1.0F;
  const float beta = 0.0F;
  const double us = TimeUs(stream, iterations, [&] {
    Check(cublasLtMatmul(handle, desc, &alpha, w.device_data<float>(), lw, x.device_data<float>(),
                         lx, &beta, y, ly, y, ly, &result.algo, workspace, workspace_bytes, stream),
          "matmul");
  });
  cudaFree(y);
  cudaFree(workspace);
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(ly);
  cublasLtMatrixLayoutDestroy(lx);
  cublasLtMatrixLayoutDestroy(lw);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(handle);
  return us;
}

int Run(int argc, char** argv) {
  CLI::App app{"our Gemm op against a bare cuBLASLt call"};
  int iterations = 1000;
  app.add_option("--iterations", iterations, "timed calls per shape")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  const GpuInventory gpus = RequireGpus("--device cuda", 1);
  InstallCudaTensorMemory();
  cudaStream_t stream = TensorStream(0);
  const std::vector<Shape3> shapes{
      {256, 256, 784}, {256, 128, 256}, {256, 10, 128}, {1024, 1024, 1024}, {4096, 4096, 4096}};
  uint64_t seed = 1;
  for (const Shape3& s : shapes) {
    const Tensor x = Random({s.m, s.k}, seed++);
    const Tensor w = Random({s.n, s.k}, seed++);
    const Tensor bias = Random({s.n}, seed++);
    const int count = s.m * s.n * s.k > (int64_t{1} << 32) ? iterations / 10 : iterations;
    // Alternate, twice each, and keep the faster of each (the first pays for warm-up effects).
    double ours = OursUs(s, x, w, bias, stream, count);
    double bare = BareUs(s, x, w, bias, stream, count);
    ours = std::min(ours, OursUs(s, x, w, bias, stream, count));
    bare = std::min(bare, BareUs(s, x, w, bias, stream, count));
    fmt::print(
        "{{\"shape\": \"[{}, {}] x [{}, {}]^T + bias\", \"ours_us\": {:.2f}, \"bare_us\": {:.2f}, "
        "\"bare_over_ours\": {:.3f}, \"device\": \"{}\"}}\n",
        s.m, s.k, s.n, s.k, ours, bare, bare / ours, gpus.gpus[0].name);
  }
  return 0;
}

}  // namespace
}  // namespace autodist::gpu

int main(int argc, char** argv) {
  return autodist::bench::Main("gemm_bench", argc, argv, autodist::gpu::Run);
}
