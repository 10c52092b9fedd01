// One op kernel of a device's backend run outside any graph, on tensors the caller holds: the
// arithmetic that runtime code needs where its tensors are (the finiteness check's sums on a GPU,
// the all-reduce's mean), through the backend's kernel registry, so that this module names no
// device library.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace onnx {
class NodeProto;
}

namespace autodist::ops {
class NodeInfo;
class OpKernel;
}  // namespace autodist::ops

namespace autodist::exec {

class StandaloneKernel {
 public:
  // The kernel of ONNX op `op_type` (opset 13) on `device`, with integer attributes
  // `attributes`; `name` names it in the kernel's errors. Throws the registry's errors when the
  // device's backend has no such kernel.
  StandaloneKernel(const std::string& op_type, const std::string& name,
                   const tensor::Device& device,
                   const std::vector<std::pair<std::string, int64_t>>& attributes = {});
  ~StandaloneKernel();
  StandaloneKernel(const StandaloneKernel&) = delete;
  StandaloneKernel& operator=(const StandaloneKernel&) = delete;

  // The op's first output for `inputs` (on the kernel's device), as inference computes it.
  tensor::Tensor Run(const std::vector<const tensor::Tensor*>& inputs);

 private:
  std::unique_ptr<onnx::NodeProto> proto_;
  std::unique_ptr<ops::NodeInfo> info_;
  std::unique_ptr<ops::OpKernel> kernel_;
  std::mt19937_64 rng_;  // ForwardContext wants one; arithmetic draws nothing
};

}  // namespace autodist::exec
