// Matrix products on the GPU through cuBLASLt, in the CPU's row-major terms (runtime/ops/math/
// blas.h's Sgemm): C[m, n] = alpha * op(A) op(B) + beta * C, optionally plus a bias row added to
// every row of C in the same call (cuBLASLt's bias epilogue), and optionally Relu applied to the
// result in that epilogue (a Gemm -> Relu the planner fused). FP32 arithmetic throughout, for
// parity with the CPU, unless the call asks for TF32 or BF16. The plan of each shape (descriptors,
// layouts and the algorithm cuBLASLt's heuristic picks) is made once and reused.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace autodist::gpu {

// The arithmetic of a product whose operands and result are fp32 in memory.
enum class GemmMath : uint8_t {
  kFp32,  // fp32 throughout (CUBLAS_COMPUTE_32F): the CPU's results
  kTf32,  // tensor cores multiply with 10-bit mantissas, add in fp32 (COMPUTE_32F_FAST_TF32)
  kBf16,  // operands rounded to bfloat16 (8-bit mantissas) on the tensor cores, accumulated in
          // fp32 (COMPUTE_32F_FAST_16BF): bf16 compute over fp32 storage
};

// An activation applied to the result in the product's epilogue, after beta C and the bias.
enum class GemmActivation : uint8_t {
  kNone,
  kRelu,  // max(x, 0): CUBLASLT_EPILOGUE_RELU, or CUBLASLT_EPILOGUE_RELU_BIAS with a bias
};

struct GemmCall {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  float alpha = 1.0F;
  const float* a = nullptr;                           // [m, k], or [k, m] with trans_a
  const float* b = nullptr;                           // [k, n], or [n, k] with trans_b
  float beta = 0.0F;                                  // C's weight; C is read only when beta != 0
  float* c = nullptr;                                 // [m, n]
  const float* bias = nullptr;                        // [n], added to every row; null for none
  GemmActivation activation = GemmActivation::kNone;  // applied last, to every element of C
  // The session's precision: fp32 throughout, or tensor-core TF32 or BF16 multiplies.
  GemmMath math = GemmMath::kFp32;
  // `batch` products of packed operands, operand X of product j at X + j * stride_x (a stride of
  // 0 shares the operand; the bias is shared): attention's per-head products in one call.
  int64_t batch = 1;
  int64_t stride_a = 0;
  int64_t stride_b = 0;
  int64_t stride_c = 0;
};

// Queues the product on `stream` of GPU `device`. Throws Internal naming cuBLASLt's status when
// the library fails (no algorithm, bad arguments).
void Sgemm(const GemmCall& call, int device, cudaStream_t stream);

}  // namespace autodist::gpu
