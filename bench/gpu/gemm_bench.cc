// Our whole Gemm and MatMul ops on the GPU (the CUDA kernels as the engine runs them: registry,
// contexts, the output allocated from the pool, cuBLASLt with the bias and Relu epilogues or
// strided batches) against a bare cuBLASLt call with the same layout, epilogue and batches and
// cuBLASLt's first heuristic choice (ours times cuBLASLt's candidates on a shape's first call and
// keeps the fastest, gpu/blas/matmul.cc). The shapes are the four Fashion-MNIST models' at batch
// 256: their Linear layers as Gemm (with the Relu the planner fuses where one follows), the
// Transformer's Linear layers on [256, 28, width] as MatMul (one folded product, the Add of its
// bias fused into the epilogue as the planner fuses it) and its attention's per-head products (a
// strided batch of 1024), and two larger squares. Prints one JSON line per shape: microseconds
// per call of each and bare / ours.
#include <cublasLt.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <random>
#include <string>
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

// A Gemm case: Y[m, n] = X[m, k] W[n, k]^T + bias[n], then Relu where `relu` (a Linear layer
// followed by a Relu, which the planner fuses into the Gemm).
struct GemmCase {
  const char* name;
  int64_t m;
  int64_t n;
  int64_t k;
  bool relu;
};

// A MatMul case: A[batch..., m, k] B[(batch...,) k, n]. Without `batched` B has no batch and the
// op folds A's batch into one product with the Add of its bias fused (a Linear layer on a
// sequence); with it both have `batch` entries of one matrix each (attention's heads).
struct MatMulCase {
  const char* name;
  int64_t batch;
  int64_t m;
  int64_t n;
  int64_t k;
  bool batched;
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

// Our kernel of `proto` (its NodeInfo given `relu`, or a bias as its last input, fused) on
// `inputs`, as the engine calls it.
double OursUs(onnx::NodeProto proto, bool relu, bool bias, const std::vector<const Tensor*>& inputs,
              cudaStream_t stream, int iterations) {
  proto.set_name("bench");
  proto.add_output("y");
  ops::NodeInfo node(proto, 17);
  if (relu) node.SetFusedActivation(ops::FusedActivation::kRelu);
  node.SetFusedBias(bias);
  const auto kernel = ops::KernelRegistry::Global().Create(node, tensor::DeviceKind::kCuda);
  std::mt19937_64 rng(1);
  return TimeUs(stream, iterations, [&] {
    ops::ForwardContext ctx(inputs, 1, true, &rng, &node);
    kernel->Forward(ctx);
  });
}

onnx::NodeProto GemmProto() {
  onnx::NodeProto proto;
  proto.set_op_type("Gemm");
  for (const char* input : {"x", "w", "b"}) proto.add_input(input);
  auto* trans_b = proto.add_attribute();
  trans_b->set_name("transB");
  trans_b->set_type(onnx::AttributeProto::INT);
  trans_b->set_i(1);
  return proto;
}

onnx::NodeProto MatMulProto() {
  onnx::NodeProto proto;
  proto.set_op_type("MatMul");
  for (const char* input : {"a", "b"}) proto.add_input(input);
  return proto;
}

// One bare cuBLASLt product in row-major terms: Y[m, n] = A[m, k] op(B) (+ bias), `batch` times
// at strides of whole matrices. B is [n, k] and transposed (a Gemm's W) or [k, n] (a MatMul's).
struct BareCall {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  bool b_transposed = false;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const float* a = nullptr;
  const float* b = nullptr;
  const float* bias = nullptr;  // with a BIAS epilogue
};

// Sets a layout's batch count and stride (elements between entries).
void SetBatch(cublasLtMatrixLayout_t layout, int64_t batch, int64_t stride) {
  if (batch == 1) return;
  const auto count = static_cast<int32_t>(batch);
  Check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                         sizeof count),
        "batch count");
  Check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                         &stride, sizeof stride),
        "batch stride");
}

double BareUs(const BareCall& call, cudaStream_t stream, int iterations) {
  cublasLtHandle_t handle = nullptr;
  Check(cublasLtCreate(&handle), "create");
  cublasLtMatmulDesc_t desc = nullptr;
  Check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  const cublasOperation_t trans_b = call.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t none = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_b, sizeof trans_b);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &call.epilogue,
                                 sizeof call.epilogue);
  if (call.bias != nullptr) {
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &call.bias,
                                   sizeof call.bias);
  }
  // Column-major: Y^T [n, m] = op(B)^T-as-stored [n, k] A^T [k, m]. A Gemm's W [n, k] is stored
  // as [k, n] there and transposed; a MatMul's B [k, n] is stored as [n, k] already.
  cublasLtMatrixLayout_t lb = nullptr;
  cublasLtMatrixLayout_t la = nullptr;
  cublasLtMatrixLayout_t ly = nullptr;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  if (call.b_transposed) {
    Check(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, u(call.k), u(call.n), call.k), "layout");
  } else {
    Check(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, u(call.n), u(call.k), call.n), "layout");
  }
  Check(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, u(call.k), u(call.m), call.k), "layout");
  Check(cublasLtMatrixLayoutCreate(&ly, CUDA_R_32F, u(call.n), u(call.m), call.n), "layout");
  SetBatch(lb, call.batch, call.k * call.n);
  SetBatch(la, call.batch, call.m * call.k);
  SetBatch(ly, call.batch, call.m * call.n);
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
      cublasLtMatmulAlgoGetHeuristic(handle, desc, lb, la, ly, ly, preference, 1, &result, &found),
      "heuristic");
  AD_CHECK(found > 0, kInternal, "bare cuBLASLt found no algorithm");
  void* y = nullptr;
  cudaMalloc(&y, static_cast<size_t>(call.batch * call.m * call.n) * sizeof(float));
  const float alpha = 1.0F;
  const float beta = 0.0F;
  const double us = TimeUs(stream, iterations, [&] {
    Check(cublasLtMatmul(handle, desc, &alpha, call.b, lb, call.a, la, &beta, y, ly, y, ly,
                         &result.algo, workspace, workspace_bytes, stream),
          "matmul");
  });
  cudaFree(y);
  cudaFree(workspace);
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(ly);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(handle);
  return us;
}

// Alternates ours and the bare call, twice each, and keeps the faster of each (the first pays
// for warm-up effects); prints the JSON line of `shape`.
template <typename Ours, typename Bare>
void Compare(const std::string& shape, int64_t multiply_adds, int iterations,
             const std::string& device, Ours&& ours_us, Bare&& bare_us) {
  const int count = multiply_adds > (int64_t{1} << 32) ? iterations / 10 : iterations;
  double ours = ours_us(count);
  double bare = bare_us(count);
  ours = std::min(ours, ours_us(count));
  bare = std::min(bare, bare_us(count));
  fmt::print(
      "{{\"shape\": \"{}\", \"ours_us\": {:.2f}, \"bare_us\": {:.2f}, \"bare_over_ours\": "
      "{:.3f}, \"device\": \"{}\"}}\n",
      shape, ours, bare, bare / ours, device);
}

int Run(int argc, char** argv) {
  CLI::App app{"our Gemm and MatMul ops against bare cuBLASLt calls"};
  int iterations = 1000;
  app.add_option("--iterations", iterations, "timed calls per shape")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  const GpuInventory gpus = RequireGpus("--device cuda", 1);
  const std::string device = gpus.gpus[0].name;
  InstallCudaTensorMemory();
  cudaStream_t stream = TensorStream(0);
  const std::vector<GemmCase> gemms{
      {"mlp fc1", 256, 256, 784, true},    {"mlp fc2", 256, 128, 256, true},
      {"mlp fc3", 256, 10, 128, false},    {"cnn fc1", 256, 128, 3136, true},
      {"cnn fc2", 256, 10, 128, false},    {"resnet/transformer fc", 256, 10, 64, false},
      {"square", 1024, 1024, 1024, false}, {"square", 4096, 4096, 4096, false}};
  uint64_t seed = 1;
  for (const GemmCase& c : gemms) {
    const Tensor x = Random({c.m, c.k}, seed++);
    const Tensor w = Random({c.n, c.k}, seed++);
    const Tensor bias = Random({c.n}, seed++);
    BareCall bare{.m = c.m,
                  .n = c.n,
                  .k = c.k,
                  .b_transposed = true,
                  .epilogue = c.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS,
                  .a = x.device_data<float>(),
                  .b = w.device_data<float>(),
                  .bias = bias.device_data<float>()};
    Compare(
        fmt::format("{}: Gemm [{}, {}] x [{}, {}]^T + bias{}", c.name, c.m, c.k, c.n, c.k,
                    c.relu ? ", Relu" : ""),
        c.m * c.n * c.k, iterations, device,
        [&](int count) {
          return OursUs(GemmProto(), c.relu, false, {&x, &w, &bias}, stream, count);
        },
        [&](int count) { return BareUs(bare, stream, count); });
  }
  // The Transformer at batch 256: 28 tokens of width 64, 4 heads of 16, a 128-wide feed-forward.
  const std::vector<MatMulCase> matmuls{{"transformer embed", 256, 28, 64, 28, false},
                                        {"transformer qkv", 256, 28, 192, 64, false},
                                        {"transformer proj", 256, 28, 64, 64, false},
                                        {"transformer ff1", 256, 28, 128, 64, false},
                                        {"transformer ff2", 256, 28, 64, 128, false},
                                        {"transformer scores", 1024, 28, 28, 16, true},
                                        {"transformer context", 1024, 28, 16, 28, true}};
  for (const MatMulCase& c : matmuls) {
    const Tensor a = Random({c.batch, c.m, c.k}, seed++);
    const Tensor b = c.batched ? Random({c.batch, c.k, c.n}, seed++) : Random({c.k, c.n}, seed++);
    const Tensor bias = Random({c.n}, seed++);
    const bool with_bias = !c.batched;
    // Folded, the product is one [batch * m, k] x [k, n] + bias; batched, `batch` of
    // [m, k] x [k, n].
    BareCall bare{.m = c.batched ? c.m : c.batch * c.m,
                  .n = c.n,
                  .k = c.k,
                  .batch = c.batched ? c.batch : 1,
                  .epilogue = with_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT,
                  .a = a.device_data<float>(),
                  .b = b.device_data<float>(),
                  .bias = with_bias ? bias.device_data<float>() : nullptr};
    std::vector<const Tensor*> inputs{&a, &b};
    if (with_bias) inputs.push_back(&bias);
    Compare(
        fmt::format("{}: MatMul [{}, {}, {}] x [{}{}, {}]{}", c.name, c.batch, c.m, c.k,
                    c.batched ? fmt::format("{}, ", c.batch) : "", c.k, c.n,
                    with_bias ? " + bias" : ""),
        c.batch * c.m * c.n * c.k, iterations, device,
        [&](int count) { return OursUs(MatMulProto(), false, with_bias, inputs, stream, count); },
        [&](int count) { return BareUs(bare, stream, count); });
  }
  return 0;
}

}  // namespace
}  // namespace autodist::gpu

int main(int argc, char** argv) {
  return autodist::bench::Main("gemm_bench", argc, argv, autodist::gpu::Run);
}
