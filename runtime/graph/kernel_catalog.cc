#include "runtime/graph/kernel_catalog.h"

namespace autodist::graph {

std::string_view BackendName(Backend backend) { return backend == Backend::kCuda ? "cuda" : "cpu"; }

const KernelTable& KernelCatalog(Backend backend) {
  // runtime/ops: every AUTODIST_REGISTER_KERNEL.
  static const auto* cpu = new KernelTable{
      {"Add", {{7, 17}}},
      {"AveragePool", {{7, 17}}},
      {"BatchNormalization", {{9, 17}}},
      {"Cast", {{6, 17}}},
      {"Concat", {{4, 17}}},
      {"Constant", {{1, 17}}},
      {"Conv", {{1, 17}}},
      {"Div", {{7, 17}}},
      {"Dropout", {{10, 17}}},
      {"Erf", {{9, 17}}},
      {"Exp", {{6, 17}}},
      {"Flatten", {{1, 17}}},
      {"Gather", {{1, 17}}},
      {"Gemm", {{11, 17}}},
      {"GlobalAveragePool", {{1, 17}}},
      {"Identity", {{1, 17}}},
      {"LayerNormalization", {{17, 17}}},
      {"LeakyRelu", {{6, 17}}},
      {"Log", {{6, 17}}},
      {"LogSoftmax", {{1, 17}}},
      {"MatMul", {{1, 17}}},
      {"MaxPool", {{1, 17}}},
      {"Mul", {{7, 17}}},
      {"Neg", {{6, 17}}},
      {"NegativeLogLikelihoodLoss", {{12, 17}}},
      {"Pow", {{7, 17}}},
      {"ReduceMean", {{1, 17}}},
      {"ReduceSum", {{1, 17}}},
      {"Relu", {{6, 17}}},
      {"Reshape", {{5, 17}}},
      {"Shape", {{1, 17}}},
      {"Sigmoid", {{6, 17}}},
      {"Slice", {{10, 17}}},
      {"Softmax", {{1, 17}}},
      {"SoftmaxCrossEntropyLoss", {{12, 17}}},
      {"Split", {{2, 17}}},
      {"Sqrt", {{6, 17}}},
      {"Squeeze", {{1, 17}}},
      {"Sub", {{7, 17}}},
      {"Tanh", {{6, 17}}},
      {"Transpose", {{1, 17}}},
      {"Unsqueeze", {{1, 17}}},
  };
  // gpu/ops, and the CPU kernels that also serve CUDA (views): every
  // AUTODIST_REGISTER_DEVICE_KERNEL of kCuda.
  static const auto* cuda = new KernelTable{
      {"Add", {{7, 17}}},
      {"AveragePool", {{7, 17}}},
      {"BatchNormalization", {{9, 17}}},
      {"Concat", {{4, 17}}},
      {"Constant", {{1, 17}}},
      {"Conv", {{1, 17}}},
      {"Div", {{7, 17}}},
      {"Erf", {{9, 17}}},
      {"Exp", {{6, 17}}},
      {"Flatten", {{1, 17}}},
      {"Gemm", {{11, 17}}},
      {"GlobalAveragePool", {{1, 17}}},
      {"Identity", {{1, 17}}},
      {"LayerNormalization", {{17, 17}}},
      {"Log", {{6, 17}}},
      {"LogSoftmax", {{1, 17}}},
      {"MatMul", {{1, 17}}},
      {"MaxPool", {{1, 17}}},
      {"Mul", {{7, 17}}},
      {"Neg", {{6, 17}}},
      {"ReduceMean", {{1, 17}}},
      {"Relu", {{6, 17}}},
      {"Reshape", {{5, 17}}},
      {"Sigmoid", {{6, 17}}},
      {"Softmax", {{1, 17}}},
      {"SoftmaxCrossEntropyLoss", {{12, 17}}},
      {"Split", {{2, 17}}},
      {"Sqrt", {{6, 17}}},
      {"Sub", {{7, 17}}},
      {"Tanh", {{6, 17}}},
      {"Transpose", {{1, 17}}},
  };
  return backend == Backend::kCuda ? *cuda : *cpu;
}

}  // namespace autodist::graph
