// NodeInfo: what a kernel's constructor sees of its ONNX node — op type, name, opset and typed
// attribute access with errors that name the node. Kernels never touch onnx:: types directly.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ops/fused_activation.h"
#include "runtime/ops/precision.h"
#include "runtime/tensor/tensor.h"

namespace onnx {
class NodeProto;
}

namespace autodist::ops {

class NodeInfo {
 public:
  // `node` must outlive the NodeInfo. `opset` is the model's default-domain opset; `precision`
  // and `device` the session's (precision.h).
  NodeInfo(const onnx::NodeProto& node, int64_t opset, Precision precision = Precision::kFp32,
           tensor::Device device = tensor::Device::Cpu());

  const std::string& op_type() const;
  // The node's name, or "<op_type> #<output>" when the model left it empty.
  const std::string& name() const { return name_; }
  int64_t opset() const { return opset_; }
  Precision precision() const { return precision_; }
  const tensor::Device& device() const { return device_; }

  // The value of input `i` when the planner knows it before running (a Constant node's output,
  // an integer initializer: shapes, axes, lengths), on the host; null otherwise. A kernel on a
  // GPU reads such an input here once rather than copying it back from the device every step.
  const tensor::Tensor* ConstantInput(size_t i) const;
  void SetConstantInput(size_t i, tensor::Tensor value);
  // The activation the planner fused into this node's output (kNone unless it did): the kernel
  // applies it to its result, which is then the activation node's output. Set only on a node
  // whose kernel says it takes it (OpKernel::TakesFusedActivation), before that kernel is made.
  FusedActivation fused_activation() const { return fused_activation_; }
  void SetFusedActivation(FusedActivation activation) { fused_activation_ = activation; }
  // Whether the planner fused the Add of a bias onto this node's output (a MatMul -> Add with a
  // bias [N], runtime/exec/node_fusion.h): the bias is one more input after the node's own
  // (input num_inputs()), which the kernel adds to every row of its result, which is then the
  // Add's output. Set only on a node whose kernel says it takes one (OpKernel::TakesFusedBias).
  bool fused_bias() const { return fused_bias_; }
  void SetFusedBias(bool fused) { fused_bias_ = fused; }
  size_t num_inputs() const;
  size_t num_outputs() const;
  // Whether input i is given (ONNX marks absent optional inputs with an empty name).
  bool has_input(size_t i) const;

  bool HasAttribute(const std::string& attribute) const;
  int64_t GetInt(const std::string& attribute, int64_t default_value) const;
  float GetFloat(const std::string& attribute, float default_value) const;
  std::string GetString(const std::string& attribute, const std::string& default_value) const;
  std::vector<int64_t> GetInts(const std::string& attribute,
                               const std::vector<int64_t>& default_value) const;
  std::vector<float> GetFloats(const std::string& attribute,
                               const std::vector<float>& default_value) const;
  // A tensor-valued attribute (Constant's `value`), converted; nullopt when absent.
  std::optional<tensor::Tensor> GetTensor(const std::string& attribute) const;

  // "Gemm node 'fc1' (opset 14)": the prefix of every kernel error message.
  std::string Describe() const;

 private:
  const onnx::NodeProto& node_;
  int64_t opset_;
  Precision precision_;
  tensor::Device device_;
  std::string name_;
  std::map<size_t, tensor::Tensor> constant_inputs_;
  FusedActivation fused_activation_ = FusedActivation::kNone;
  bool fused_bias_ = false;
};

}  // namespace autodist::ops
