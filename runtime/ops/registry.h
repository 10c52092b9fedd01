// Kernel registry: op type + opset range -> factory. Kernels register themselves next to their
// code with AUTODIST_REGISTER_KERNEL; the ops library is linked whole so every registration runs.
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

  // Registers a kernel for opsets [since, until] of the default ONNX domain.
  void Register(const std::string& op_type, int since, int until, KernelFactory factory);

  // Creates the kernel for `node`; throws InvalidArgument naming the op type, node and opset
  // when no kernel supports it.
  std::unique_ptr<OpKernel> Create(const NodeInfo& node) const;

  bool Supports(const std::string& op_type, int64_t opset) const;
  // Every registered op type, sorted.
  std::vector<std::string> OpTypes() const;

 private:
  struct Entry {
    int since;
    int until;
    KernelFactory factory;
  };
  std::map<std::string, std::vector<Entry>> entries_;
};

namespace detail {
bool RegisterKernel(const char* op_type, int since, int until, KernelFactory factory);
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
