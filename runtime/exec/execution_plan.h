// The planner: an ONNX training graph resolved and planned once, at load. Every node gets its
// kernel (an unsupported op fails here, naming op type, node and opset); nodes are put in
// topological order; a node whose input only it reads may be fused into the node producing that
// input (node_fusion.h: Gemm -> Relu, MatMul -> Add of a bias, as one step); the loss and the
// trainable variables are found; the plan marks which nodes backward runs, when each gradient
// becomes final, and how long each value must live. The executor (executor.h) runs a plan; Session
// (session.h) puts the two together.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/ops/kernel.h"
#include "runtime/ops/precision.h"

namespace onnx {
class ModelProto;
class NodeProto;
}  // namespace onnx

namespace autodist::exec {

using tensor::DType;
using tensor::Shape;
using tensor::SparseGradient;
using tensor::Tensor;

// A graph input to feed: its name, element type and declared shape (-1 for symbolic dims).
struct InputSpec {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;
};

enum class ValueKind { kIntermediate, kFeed, kVariable, kState, kConstant };

// One tensor of the graph, by id.
struct PlannedValue {
  std::string name;
  ValueKind kind = ValueKind::kIntermediate;
  int producer = -1;  // node position
  std::vector<int> consumers;
  bool requires_grad = false;  // depends differentiably on a trainable variable
  bool keep_for_backward = false;
  int last_forward_use = -1;   // node position of the last consumer
  int last_backward_use = -1;  // position (in node order) of the earliest backward reader
};

// One node, with its kernel, in topological order.
struct PlannedNode {
  const onnx::NodeProto* proto = nullptr;
  std::unique_ptr<ops::NodeInfo> info;
  std::unique_ptr<ops::OpKernel> kernel;
  std::vector<int> inputs;   // value ids; -1 for an absent optional input
  std::vector<int> outputs;  // value ids; -1 for an unused optional output
  bool in_backward = false;
  // The node fused into this one (the activation info->fused_activation() names, or the Add of
  // the bias info->fused_bias() says this node takes as its last input), whose outputs are this
  // node's; null when none is.
  const onnx::NodeProto* fused = nullptr;
};

struct ExecutionPlan {
  ExecutionPlan();
  ~ExecutionPlan();
  ExecutionPlan(ExecutionPlan&&) noexcept;
  ExecutionPlan& operator=(ExecutionPlan&&) noexcept;

  // Owns the NodeProtos the kernels' NodeInfo refer to; behind a pointer so that they stay put.
  std::unique_ptr<onnx::ModelProto> model;
  std::string source;                                // the model's name in messages
  tensor::Device device;                             // where the kernels run and the values live
  ops::Precision precision = ops::Precision::kFp32;  // of the kernels' products
  std::vector<PlannedValue> values;
  std::unordered_map<std::string, int> value_ids;
  std::vector<PlannedNode> nodes;  // topological order
  std::vector<InputSpec> inputs;
  std::vector<int> input_ids;
  std::vector<int> output_ids;
  std::vector<std::string> output_names;
  int loss_id = -1;
  std::vector<std::string> trainable;  // trainable variables, initializer order
  std::vector<std::string> states;     // non-trainable float initializers: replica-local state
  // Each trainable variable with the node position whose backward is the last to add to its
  // gradient (the earliest reader), latest position first: the order gradients become final.
  std::vector<std::pair<int, std::string>> gradient_final_at;

  // On a device other than the CPU: the Add kernel that sums gradients there (the CPU sums in
  // the executor), with the NodeProto its NodeInfo refers to.
  std::unique_ptr<onnx::NodeProto> accumulate_proto;
  std::unique_ptr<ops::NodeInfo> accumulate_info;
  std::unique_ptr<ops::OpKernel> accumulate;

  // The id of `name`, made (as an intermediate value) when it has none yet.
  int IdOf(const std::string& name);

 private:
  friend ExecutionPlan PlanExecution(const onnx::ModelProto& model, const std::string& source,
                                     const std::string& loss, std::vector<Tensor>& initializers,
                                     const tensor::Device& device, ops::Precision precision,
                                     bool fuse_activations);
  // The planning steps, in the order PlanExecution takes them.
  void LoadInitializers(std::vector<Tensor>& initializers);
  void LoadInputsAndOutputs();
  // `loss` as PlanExecution's; activations are fused when `fuse_activations`.
  void LoadNodes(std::vector<Tensor>& initializers, const std::string& loss, bool fuse_activations);
  // Throws InvalidArgument listing every op of the graph without a kernel on `device`.
  void CheckKernelsExist() const;
  void FindLoss(const std::string& requested);
  void PlanGradients();
  void PlanLifetimes();
};

// Plans `model` (named `source` in messages). `loss` names the loss output; empty: the output
// named "loss", else the only float output of rank 0 (declared), else an error. `initializers`
// receives every initializer's tensor, by value id (empty for other values), on the CPU. The
// kernels are `device`'s backend's, computing products in `precision`. Throws InvalidArgument
// naming the model for a graph it cannot train, one with ops that backend has no kernel for (all
// of them listed), or a precision other than fp32 on the CPU. `fuse_activations` false plans
// every node as a step of its own (the fused plan's reference in tests and benchmarks).
ExecutionPlan PlanExecution(const onnx::ModelProto& model, const std::string& source,
                            const std::string& loss, std::vector<Tensor>& initializers,
                            const tensor::Device& device = tensor::Device::Cpu(),
                            ops::Precision precision = ops::Precision::kFp32,
                            bool fuse_activations = true);

}  // namespace autodist::exec
