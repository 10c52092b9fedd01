// Session: an ONNX training graph made executable, and the values it trains. At load the planner
// (execution_plan.h) resolves every node to a kernel (unsupported ops fail here, naming op type,
// node and opset), orders the nodes, finds the loss and the trainable variables, and plans value
// lifetimes. Per step the executor (executor.h) runs forward (training or inference) and
// backward (gradients of the loss for every trainable variable).
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/exec/executor.h"
#include "runtime/ops/precision.h"

namespace onnx {
class ModelProto;
}

namespace autodist::exec {

struct SessionOptions {
  // Name of the loss output; empty: the output named "loss", else the only float output of
  // rank 0 (declared), else an error.
  std::string loss;
  uint64_t seed = 0;  // random engine (Dropout)
  // Where the kernels run and the variables live. Feeds may come from the host; outputs,
  // gradients and variables are on this device.
  tensor::Device device = tensor::Device::Cpu();
  // Of matrix products and convolutions (ops/precision.h): fp32, or on a GPU tf32.
  ops::Precision precision = ops::Precision::kFp32;
  // Whether the planner fuses nodes into the nodes feeding them (node_fusion.h: activations,
  // and the Add of a bias after a MatMul).
  // The results are the same bits either way; false is the reference tests and benchmarks
  // compare the fused plan with.
  bool fuse_activations = true;
};

class Session {
 public:
  // `source` is the model's path: it names the model in messages, and external data
  // (graph/external_data.h) is read relative to its directory.
  Session(const onnx::ModelProto& model, const std::string& source, const SessionOptions& options);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Forward only. Returns the requested outputs (every graph output when `fetch` is empty).
  // In training mode, replica-local state (BatchNorm running statistics) is updated.
  std::map<std::string, Tensor> Run(const Feeds& feeds, bool training,
                                    const std::vector<std::string>& fetch = {});

  struct StepResult {
    float loss = 0;
    std::map<std::string, Tensor> outputs;      // every graph output of the forward pass
    std::map<std::string, Gradient> gradients;  // by trainable variable name
  };
  // Forward in training mode and backward from the loss; `on_ready` (optional) hears each
  // gradient as it becomes final, in the order backward finishes them.
  StepResult ForwardBackward(const Feeds& feeds, const GradientReadyFn& on_ready = nullptr);

  const std::vector<InputSpec>& inputs() const;
  const std::string& loss_name() const;
  const std::vector<std::string>& output_names() const;
  // Trainable variables in initializer order, and their current values (mutable: the
  // optimizer updates them in place).
  const std::vector<std::string>& trainable_names() const;
  Tensor& variable(const std::string& name);
  // Non-trainable float initializers: replica-local state.
  const std::vector<std::string>& state_names() const;
  Tensor& state(const std::string& name);
  std::mt19937_64& rng();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace autodist::exec
