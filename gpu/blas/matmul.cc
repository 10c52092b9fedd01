#include "gpu/blas/matmul.h"

#include <cublasLt.h>
#include <fmt/format.h>

#include <array>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/device/stream.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"

namespace autodist::gpu {
namespace {

// cuBLAS's names for its statuses (cublasGetStatusName is in libcublas, which we do not link).
const char* StatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "a cuBLAS status";
  }
}

void CheckLt(cublasStatus_t status, const char* what) {
  AD_CHECK(status == CUBLAS_STATUS_SUCCESS, kInternal, "cuBLASLt {}: {} ({})", what,
           StatusName(status), static_cast<int>(status));
}

// cuBLASLt may use this much scratch memory per call (its recommendation for Hopper).
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// What makes one plan: the shape, the transposes, whether beta and a bias take part, the
// activation, the arithmetic, and the batch. The epilogue (bias, activation) is part of the
// descriptor the candidate kernels were chosen and timed for, so it is part of the key.
using PlanKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, bool, bool, GemmActivation,
                           GemmMath, int64_t, int64_t, int64_t, int64_t>;

// The epilogue of a call: its bias and its activation, in one cuBLASLt epilogue.
cublasLtEpilogue_t EpilogueOf(const GemmCall& call) {
  const bool bias = call.bias != nullptr;
  switch (call.activation) {
    case GemmActivation::kRelu:
      return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case GemmActivation::kNone:
      break;
  }
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

cublasComputeType_t ComputeTypeOf(GemmMath math) {
  switch (math) {
    case GemmMath::kTf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmMath::kBf16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    case GemmMath::kFp32:
      break;
  }
  return CUBLAS_COMPUTE_32F;
}

// The descriptors of one shape and the algorithm chosen for it.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr;   // our B, cuBLASLt's A
  cublasLtMatrixLayout_t second = nullptr;  // our A, cuBLASLt's B
  cublasLtMatrixLayout_t out = nullptr;
  cublasLtMatmulAlgo_t algo{};
  // cuBLASLt's candidates, best guess first, until the first call has timed them.
  std::vector<cublasLtMatmulAlgo_t> candidates;
  std::mutex mutex;  // the bias pointer is set on `desc` per call
  ~Plan() {
    if (out != nullptr) cublasLtMatrixLayoutDestroy(out);
    if (second != nullptr) cublasLtMatrixLayoutDestroy(second);
    if (first != nullptr) cublasLtMatrixLayoutDestroy(first);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

void SetBatch(cublasLtMatrixLayout_t layout, int64_t batch, int64_t stride) {
  const auto count = static_cast<int32_t>(batch);
  CheckLt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                           sizeof count),
          "setting the batch count");
  CheckLt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &stride, sizeof stride),
          "setting the batch stride");
}

// One GPU's handle, workspace and plans.
class GemmContext {
 public:
  explicit GemmContext(int device) : device_(device) {
    CheckLt(cublasLtCreate(&handle_), "creating a handle");
    workspace_ = TensorPool(device).Allocate(kWorkspaceBytes, TensorStream(device));
  }
  GemmContext(const GemmContext&) = delete;
  GemmContext& operator=(const GemmContext&) = delete;

  void Run(const GemmCall& call, cudaStream_t stream) {
    Plan& plan = PlanFor(call);
    const std::lock_guard lock(plan.mutex);
    if (call.bias != nullptr) {
      const void* bias = call.bias;
      CheckLt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias),
              "setting the bias");
    }
    if (!plan.candidates.empty()) ChooseFastest(plan, call, stream);
    Launch(plan, plan.algo, call, call.c, stream);
  }

 private:
  void Launch(const Plan& plan, const cublasLtMatmulAlgo_t& algo, const GemmCall& call, float* c,
              cudaStream_t stream) {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B goes first.
    const float beta = call.beta;
    CheckLt(cublasLtMatmul(handle_, plan.desc, &call.alpha, call.b, plan.first, call.a, plan.second,
                           &beta, c, plan.out, c, plan.out, &algo, workspace_.data(),
                           workspace_.bytes(), stream),
            "running a matrix product");
  }

  // cuBLASLt's first guess is often not its fastest kernel for the skinny products of small
  // networks (Conv's weight gradient: 64 x 288 over 20,000 positions). The first call of a shape
  // times each candidate on its operands, into a scratch output, and keeps the fastest, as
  // cuDNN's benchmark mode does; the waits this takes happen once per shape.
  void ChooseFastest(Plan& plan, const GemmCall& call, cudaStream_t stream) {
    constexpr int kRuns = 3;
    DeviceBuffer scratch = TensorPool(device_).Allocate(
        static_cast<size_t>((call.batch - 1) * call.stride_c + call.m * call.n) * sizeof(float),
        stream);
    CheckCuda(cudaMemsetAsync(scratch.data(), 0, scratch.bytes(), stream), "zeroing a scratch C");
    auto* c = static_cast<float*>(scratch.data());
    Event start(/*timing=*/true);
    Event stop(/*timing=*/true);
    float best_ms = 0.0F;
    for (const cublasLtMatmulAlgo_t& algo : plan.candidates) {
      Launch(plan, algo, call, c, stream);  // warm-up
      start.Record(stream);
      for (int run = 0; run < kRuns; ++run) Launch(plan, algo, call, c, stream);
      stop.Record(stream);
      stop.Synchronize();
      const float ms = stop.ElapsedMsSince(start);
      if (&algo == plan.candidates.data() || ms < best_ms) {
        best_ms = ms;
        plan.algo = algo;
      }
    }
    plan.candidates.clear();
  }

  Plan& PlanFor(const GemmCall& call) {
    const PlanKey key{
        call.trans_a,      call.trans_b,         call.m,          call.n,    call.k,
        call.beta != 0.0F, call.bias != nullptr, call.activation, call.math, call.batch,
        call.stride_a,     call.stride_b,        call.stride_c};
    const std::lock_guard lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    auto plan = std::make_unique<Plan>();
    CheckLt(cublasLtMatmulDescCreate(&plan->desc, ComputeTypeOf(call.math), CUDA_R_32F),
            "creating a matmul descriptor");
    // Column-major views of the row-major operands: our B [k, n] is column-major [n, k] with
    // leading dimension n, used as is; transposed ([n, k] row-major) it is [k, n], transposed
    // back. Likewise A.
    const cublasOperation_t op_first = call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_second = call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    CheckLt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                           sizeof op_first),
            "setting a transpose");
    CheckLt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                           sizeof op_second),
            "setting a transpose");
    if (const cublasLtEpilogue_t epilogue = EpilogueOf(call);
        epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
      CheckLt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                             sizeof epilogue),
              "setting the epilogue");
    }
    if (call.bias != nullptr) {
      const cudaDataType_t bias_type = CUDA_R_32F;
      CheckLt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                             &bias_type, sizeof bias_type),
              "setting the bias type");
    }
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    CheckLt(
        call.trans_b
            ? cublasLtMatrixLayoutCreate(&plan->first, CUDA_R_32F, u(call.k), u(call.n), call.k)
            : cublasLtMatrixLayoutCreate(&plan->first, CUDA_R_32F, u(call.n), u(call.k), call.n),
        "describing B");
    CheckLt(
        call.trans_a
            ? cublasLtMatrixLayoutCreate(&plan->second, CUDA_R_32F, u(call.m), u(call.k), call.m)
            : cublasLtMatrixLayoutCreate(&plan->second, CUDA_R_32F, u(call.k), u(call.m), call.k),
        "describing A");
    CheckLt(cublasLtMatrixLayoutCreate(&plan->out, CUDA_R_32F, u(call.n), u(call.m), call.n),
            "describing C");
    if (call.batch > 1) {
      SetBatch(plan->first, call.batch, call.stride_b);
      SetBatch(plan->second, call.batch, call.stride_a);
      SetBatch(plan->out, call.batch, call.stride_c);
    }
    cublasLtMatmulPreference_t preference = nullptr;
    CheckLt(cublasLtMatmulPreferenceCreate(&preference), "creating a preference");
    const uint64_t workspace = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &workspace, sizeof workspace);
    constexpr int kCandidates = 8;
    std::array<cublasLtMatmulHeuristicResult_t, kCandidates> results{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->first, plan->second, plan->out,
                                       plan->out, preference, kCandidates, results.data(), &found);
    cublasLtMatmulPreferenceDestroy(preference);
    CheckLt(status, "choosing an algorithm");
    AD_CHECK(found > 0, kInternal, "cuBLASLt has no algorithm for [{}, {}] x [{}, {}] on GPU {}",
             call.m, call.k, call.k, call.n, device_);
    plan->algo = results[0].algo;
    if (found > 1) {
      for (int i = 0; i < found; ++i)
        plan->candidates.push_back(results[static_cast<size_t>(i)].algo);
    }
    return *plans_.emplace(key, std::move(plan)).first->second;
  }

  int device_;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::mutex mutex_;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
};

GemmContext& ContextFor(int device) {
  static std::mutex mutex;
  // Never destroyed: the handles outlive every static that may still run products.
  static auto* contexts = new std::map<int, std::unique_ptr<GemmContext>>();
  const std::lock_guard lock(mutex);
  auto& context = (*contexts)[device];
  if (context == nullptr) context = std::make_unique<GemmContext>(device);
  return *context;
}

}  // namespace

void Sgemm(const GemmCall& call, int device, cudaStream_t stream) {
  if (call.m == 0 || call.n == 0 || call.batch == 0) return;
  AD_CHECK(call.batch <= std::numeric_limits<int32_t>::max(), kInvalidArgument,
           "cuBLASLt: a batch of {} products is more than it takes", call.batch);
  ContextFor(device).Run(call, stream);
}

}  // namespace autodist::gpu
