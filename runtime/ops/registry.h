// Kernel registry: backend + op type + opset range -> factory. Kernels register themselves next
// to their code, the CPU ones here with AUTODIST_REGISTER_KERNEL, the CUDA ones in gpu/ops/ with
// AUTODIST_REGISTER_DEVICE_KERNEL (as ONNX Runtime's providers/cpu and providers/cuda register
// theirs); the libraries are linked whole so every registration runs. The engine asks for the
// kernel of a node on a backend and names neither op nor device itself.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ops/kernel.h"

namespace autodist::ops {

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const NodeInfo&)>;

class KernelRegistry {
 public:
  static KernelRegistry& Global();

  // Registers a kernel of `backend` for opsets [since, until] of the default ONNX domain.
  void Register(const std::string& op_type, int since, int until, KernelFactory factory,
                tensor::DeviceKind backend = tensor::DeviceKind::kCpu);

  // Creates the kernel of `backend` for `node`; throws InvalidArgument naming the op type, node,
  // opset and backend when no kernel supports it.
  std::unique_ptr<OpKernel> Create(const NodeInfo& node,
                                   tensor::DeviceKind backend = tensor::DeviceKind::kCpu) const;

  bool Supports(const std::string& op_type, int64_t opset,
                tensor::DeviceKind backend = tensor::DeviceKind::kCpu) const;
  // Every op type registered for `backend`, sorted.
  std::vector<std::string> OpTypes(tensor::DeviceKind backend = tensor::DeviceKind::kCpu) const;

 private:
  struct Entry {
    int since;
    int until;
    KernelFactory factory;
  };
  using Table = std::map<std::string, std::vector<Entry>>;
  const Table& TableOf(tensor::DeviceKind backend) const;

  std::map<tensor::DeviceKind, Table> tables_;
};

namespace detail {
bool RegisterKernel(const char* op_type, int since, int until, KernelFactory factory,
                    tensor::DeviceKind backend = tensor::DeviceKind::kCpu);
}

}  // namespace autodist::ops

#define AUTODIST_CONCAT_INNER(a, b) a##b
#define AUTODIST_CONCAT(a, b) AUTODIST_CONCAT_INNER(a, b)

// AUTODIST_REGISTER_KERNEL(Relu, 6, 17, ReluKernel): ReluKernel serves Relu in opsets 6..17.
#define AUTODIST_REGISTER_KERNEL(op_type, since, until, KernelClass)                              \
  [[maybe_unused]] static const bool AUTODIST_CONCAT(kRegistered_, __LINE__) =                    \
      ::autodist::ops::detail::RegisterKernel(#op_type, since, until,                             \
                                              [](const ::autodist::ops::NodeInfo& node)           \
                                                  -> std::unique_ptr<::autodist::ops::OpKernel> { \
                                                return std::make_unique<KernelClass>(node);       \
                                              })

// AUTODIST_REGISTER_DEVICE_KERNEL(Relu, 6, 17, CudaReluKernel, kCuda): the kernel of the kCuda
// backend for Relu in opsets 6..17.
#define AUTODIST_REGISTER_DEVICE_KERNEL(op_type, since, until, KernelClass, backend) \
  [[maybe_unused]] static const bool AUTODIST_CONCAT(kRegistered_, __LINE__) =       \
      ::autodist::ops::detail::RegisterKernel(                                       \
          #op_type, since, until,                                                    \
          [](const ::autodist::ops::NodeInfo& node)                                  \
              -> std::unique_ptr<::autodist::ops::OpKernel> {                        \
            return std::make_unique<KernelClass>(node);                              \
          },                                                                         \
          ::autodist::tensor::DeviceKind::backend)
