#include "runtime/exec/execution_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>

#include "runtime/common/error.h"
#include "runtime/exec/initializer_value.h"
#include "runtime/exec/node_fusion.h"
#include "runtime/graph/graph_item.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/constant_value.h"

namespace autodist::exec {
namespace {

int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return 1;
}

}  // namespace

ExecutionPlan::ExecutionPlan() = default;
ExecutionPlan::~ExecutionPlan() = default;
ExecutionPlan::ExecutionPlan(ExecutionPlan&&) noexcept = default;
ExecutionPlan& ExecutionPlan::operator=(ExecutionPlan&&) noexcept = default;

int ExecutionPlan::IdOf(const std::string& name) {
  const auto [it, inserted] = value_ids.emplace(name, static_cast<int>(values.size()));
  if (inserted) {
    PlannedValue value;
    value.name = name;
    values.push_back(std::move(value));
  }
  return it->second;
}

ExecutionPlan PlanExecution(const onnx::ModelProto& model, const std::string& source,
                            const std::string& loss, std::vector<Tensor>& initializers,
                            const tensor::Device& device, ops::Precision precision,
                            bool fuse_activations) {
  AD_CHECK(precision == ops::Precision::kFp32 || !device.is_cpu(), kInvalidArgument,
           "model '{}': precision {} is for GPUs; the CPU computes fp32", source,
           ops::PrecisionName(precision));
  ExecutionPlan plan;
  plan.model = std::make_unique<onnx::ModelProto>(model);
  plan.source = source;
  plan.device = device;
  plan.precision = precision;
  plan.CheckKernelsExist();
  plan.LoadInitializers(initializers);
  plan.LoadInputsAndOutputs();
  plan.LoadNodes(initializers, loss, fuse_activations);
  plan.FindLoss(loss);
  plan.PlanGradients();
  plan.PlanLifetimes();
  return plan;
}

void ExecutionPlan::LoadInitializers(std::vector<Tensor>& initializers) {
  // The compiler's variable table decides what is trainable, so runtime and Strategy agree.
  const graph::GraphItem item = graph::GraphItem::FromOnnx(*model, source);
  std::set<std::string> trainable_set;
  std::set<std::string> float_set;
  for (const graph::Variable& variable : item.variables()) {
    float_set.insert(variable.name);
    if (variable.trainable) trainable_set.insert(variable.name);
  }
  for (const auto& initializer : model->graph().initializer()) {
    const int id = IdOf(initializer.name());
    PlannedValue& value = values[static_cast<size_t>(id)];
    if (trainable_set.contains(initializer.name())) {
      value.kind = ValueKind::kVariable;
      trainable.push_back(initializer.name());
    } else if (float_set.contains(initializer.name())) {
      value.kind = ValueKind::kState;
      states.push_back(initializer.name());
    } else {
      value.kind = ValueKind::kConstant;
    }
    initializers.resize(values.size());
    const std::string what =
        fmt::format("model '{}': initializer '{}'", source, initializer.name());
    initializers[static_cast<size_t>(id)] = InitializerValue(initializer, source, what);
    AD_CHECK(value.kind != ValueKind::kVariable ||
                 initializers[static_cast<size_t>(id)].dtype() == DType::kFloat32,
             kInvalidArgument,
             "model '{}': variable '{}' is {}; training supports float32 variables", source,
             initializer.name(), tensor::DTypeName(initializers[static_cast<size_t>(id)].dtype()));
  }
}

void ExecutionPlan::LoadInputsAndOutputs() {
  for (const auto& input : model->graph().input()) {
    const int id = IdOf(input.name());
    if (values[static_cast<size_t>(id)].kind != ValueKind::kIntermediate) continue;  // initializer
    values[static_cast<size_t>(id)].kind = ValueKind::kFeed;
    InputSpec spec;
    spec.name = input.name();
    const auto& type = input.type().tensor_type();
    spec.dtype = tensor::DTypeFromOnnx(type.elem_type(),
                                       fmt::format("model '{}': input '{}'", source, input.name()));
    for (const auto& dim : type.shape().dim()) {
      spec.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    }
    inputs.push_back(spec);
    input_ids.push_back(id);
  }
  for (const auto& output : model->graph().output()) {
    output_ids.push_back(IdOf(output.name()));
    output_names.push_back(output.name());
  }
}

void ExecutionPlan::CheckKernelsExist() const {
  if (device.is_cpu()) return;  // the CPU's missing ops are reported node by node, as before
  const int64_t opset = DefaultOpset(*model);
  std::map<std::string, std::vector<std::string>> missing;  // op type -> its nodes
  for (const auto& node : model->graph().node()) {
    if (!ops::KernelRegistry::Global().Supports(node.op_type(), opset, device.kind)) {
      missing[node.op_type()].push_back(fmt::format("'{}'", node.name()));
    }
  }
  std::vector<std::string> described;
  described.reserve(missing.size());
  for (const auto& [op_type, names] : missing) {
    described.push_back(fmt::format("{} (node {})", op_type, fmt::join(names, ", ")));
  }
  AD_CHECK(missing.empty(), kInvalidArgument,
           "model '{}': {} has no kernel yet for {}; docs/gpu.md lists the ops it runs", source,
           tensor::DeviceKindName(device.kind), fmt::join(described, ", "));
}

void ExecutionPlan::LoadNodes(std::vector<Tensor>& initializers, const std::string& loss,
                              bool fuse_activations) {
  const int64_t opset = DefaultOpset(*model);
  const std::map<int, NodeFusion> fusions =
      fuse_activations ? FindNodeFusions(model->graph(), loss, opset, device.kind)
                       : std::map<int, NodeFusion>{};
  std::set<int> fused;  // nodes planned inside their producer's step (node_fusion.h)
  // Kahn's algorithm, stable in model order: ONNX requires sorted graphs, but we do not rely
  // on it.
  const auto& protos = model->graph().node();
  std::unordered_map<std::string, int> producer_of;
  for (int n = 0; n < protos.size(); ++n) {
    for (const auto& output : protos[n].output()) {
      if (!output.empty()) producer_of[output] = n;
    }
  }
  std::vector<int> pending(static_cast<size_t>(protos.size()), 0);
  std::vector<std::vector<int>> dependents(static_cast<size_t>(protos.size()));
  for (int n = 0; n < protos.size(); ++n) {
    for (const auto& input : protos[n].input()) {
      const auto it = producer_of.find(input);
      if (input.empty() || it == producer_of.end()) continue;
      ++pending[static_cast<size_t>(n)];
      dependents[static_cast<size_t>(it->second)].push_back(n);
    }
  }
  std::set<int> ready;
  for (int n = 0; n < protos.size(); ++n) {
    if (pending[static_cast<size_t>(n)] == 0) ready.insert(n);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int n = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(n);
    for (const int dependent : dependents[static_cast<size_t>(n)]) {
      if (--pending[static_cast<size_t>(dependent)] == 0) ready.insert(dependent);
    }
  }
  AD_CHECK(order.size() == static_cast<size_t>(protos.size()), kInvalidArgument,
           "model '{}': the graph has a cycle", source);

  // Values known before running: Constant nodes' outputs and integer initializers (shapes, axes,
  // lengths; never trained), handed to their consumers' NodeInfo.
  std::unordered_map<std::string, Tensor> constants;
  for (const int n : order) {
    // Its producer came first (it reads that node's output) and took its place.
    if (fused.contains(n)) continue;
    const onnx::NodeProto& proto = protos[n];
    AD_CHECK(proto.domain().empty() || proto.domain() == "ai.onnx", kInvalidArgument,
             "model '{}': node '{}' uses op {} of domain '{}'; only the default ONNX domain is "
             "supported",
             source, proto.name(), proto.op_type(), proto.domain());
    PlannedNode node;
    node.proto = &proto;
    node.info = std::make_unique<ops::NodeInfo>(proto, opset, precision, device);
    for (int i = 0; i < proto.input_size(); ++i) {
      const std::string& input = proto.input(i);
      if (input.empty()) continue;
      if (const auto it = constants.find(input); it != constants.end()) {
        node.info->SetConstantInput(static_cast<size_t>(i), it->second);
        continue;
      }
      const auto id = value_ids.find(input);
      if (id == value_ids.end() || static_cast<size_t>(id->second) >= initializers.size()) continue;
      const Tensor& initializer = initializers[static_cast<size_t>(id->second)];
      if (initializer.defined() && initializer.dtype() != tensor::DType::kFloat32) {
        node.info->SetConstantInput(static_cast<size_t>(i), initializer);
      }
    }
    if (proto.op_type() == "Constant" && proto.output_size() == 1) {
      constants.emplace(proto.output(0), ops::ConstantValue(*node.info));
    }
    node.kernel = ops::KernelRegistry::Global().Create(*node.info, device.kind);
    std::vector<std::string> step_inputs(proto.input().begin(), proto.input().end());
    if (const auto fusion = fusions.find(n); fusion != fusions.end()) {
      const NodeFusion& f = fusion->second;
      const bool bias = !f.bias.empty();
      if (bias ? node.kernel->TakesFusedBias() : node.kernel->TakesFusedActivation(f.activation)) {
        // The step computes the consumer's output; the tensor between the two is never made. A
        // fused bias is the step's input after the node's own.
        if (bias) {
          node.info->SetFusedBias(true);
          step_inputs.push_back(f.bias);
        } else {
          node.info->SetFusedActivation(f.activation);
        }
        node.kernel = ops::KernelRegistry::Global().Create(*node.info, device.kind);
        node.fused = &protos[f.consumer];
        fused.insert(f.consumer);
      }
    }
    const int position = static_cast<int>(nodes.size());
    for (const std::string& input : step_inputs) {
      if (input.empty()) {
        node.inputs.push_back(-1);
        continue;
      }
      const int id = IdOf(input);
      node.inputs.push_back(id);
      values[static_cast<size_t>(id)].consumers.push_back(position);
    }
    for (const auto& output : node.fused != nullptr ? node.fused->output() : proto.output()) {
      if (output.empty()) {
        node.outputs.push_back(-1);
        continue;
      }
      const int id = IdOf(output);
      AD_CHECK(values[static_cast<size_t>(id)].kind == ValueKind::kIntermediate &&
                   values[static_cast<size_t>(id)].producer < 0,
               kInvalidArgument, "model '{}': tensor '{}' is produced twice", source, output);
      values[static_cast<size_t>(id)].producer = position;
      node.outputs.push_back(id);
    }
    nodes.push_back(std::move(node));
  }
  if (!device.is_cpu()) {
    accumulate_proto = std::make_unique<onnx::NodeProto>();
    accumulate_proto->set_op_type("Add");
    accumulate_proto->set_name("gradient accumulation");
    accumulate_info = std::make_unique<ops::NodeInfo>(*accumulate_proto, opset, precision, device);
    accumulate = ops::KernelRegistry::Global().Create(*accumulate_info, device.kind);
  }
  initializers.resize(values.size());
  for (const PlannedValue& value : values) {
    AD_CHECK(value.kind != ValueKind::kIntermediate || value.producer >= 0, kInvalidArgument,
             "model '{}': tensor '{}' is read but is neither produced, an input nor an "
             "initializer",
             source, value.name);
  }
}

void ExecutionPlan::FindLoss(const std::string& requested) {
  std::vector<std::string> described;
  std::vector<int> scalar_floats;
  int named_loss = -1;
  for (const auto& output : model->graph().output()) {
    const auto& type = output.type().tensor_type();
    const bool scalar = type.has_shape() && type.shape().dim_size() == 0;
    if (type.elem_type() == 1 && scalar) scalar_floats.push_back(value_ids.at(output.name()));
    if (output.name() == "loss") named_loss = value_ids.at(output.name());
    described.push_back(fmt::format("'{}'{}", output.name(), scalar ? " (scalar)" : ""));
  }
  if (!requested.empty()) {
    const auto it = value_ids.find(requested);
    AD_CHECK(it != value_ids.end(), kInvalidArgument,
             "model '{}': the loss '{}' is not a tensor of the graph; outputs: {}", source,
             requested, fmt::join(described, ", "));
    loss_id = it->second;
  } else if (named_loss >= 0) {
    loss_id = named_loss;
  } else {
    AD_CHECK(scalar_floats.size() == 1, kInvalidArgument,
             "model '{}': cannot tell the loss: the graph needs exactly one scalar float output "
             "or an output named 'loss' (or name it with --loss); outputs: {}",
             source, fmt::join(described, ", "));
    loss_id = scalar_floats.front();
  }
}

void ExecutionPlan::PlanGradients() {
  for (PlannedValue& value : values) value.requires_grad = value.kind == ValueKind::kVariable;
  for (const PlannedNode& node : nodes) {
    bool any = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int id = node.inputs[i];
      any |= id >= 0 && values[static_cast<size_t>(id)].requires_grad &&
             node.kernel->IsDifferentiable(i);
    }
    for (const int id : node.outputs) {
      if (id >= 0) values[static_cast<size_t>(id)].requires_grad = any;
    }
  }
  // Walk back from the loss: a node is in backward when one of its outputs leads to the loss
  // and one of its inputs wants a gradient.
  std::vector<bool> leads_to_loss(values.size(), false);
  leads_to_loss[static_cast<size_t>(loss_id)] = true;
  for (size_t p = nodes.size(); p-- > 0;) {
    PlannedNode& node = nodes[p];
    bool leads = false;
    for (const int id : node.outputs) leads |= id >= 0 && leads_to_loss[static_cast<size_t>(id)];
    if (!leads) continue;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int id = node.inputs[i];
      if (id >= 0 && values[static_cast<size_t>(id)].requires_grad &&
          node.kernel->IsDifferentiable(i)) {
        leads_to_loss[static_cast<size_t>(id)] = true;
        node.in_backward = true;
      }
    }
  }
}

void ExecutionPlan::PlanLifetimes() {
  std::map<int, int> earliest_reader;  // trainable value id -> position
  for (const std::string& name : trainable) earliest_reader[value_ids.at(name)] = -1;
  for (size_t p = 0; p < nodes.size(); ++p) {
    if (!nodes[p].in_backward) continue;
    for (const int id : nodes[p].inputs) {
      const auto it = earliest_reader.find(id);
      if (it != earliest_reader.end() && it->second < 0) it->second = static_cast<int>(p);
    }
  }
  for (const std::string& name : trainable) {
    gradient_final_at.emplace_back(earliest_reader.at(value_ids.at(name)), name);
  }
  std::stable_sort(gradient_final_at.begin(), gradient_final_at.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t p = 0; p < nodes.size(); ++p) {
    const PlannedNode& node = nodes[p];
    for (const int id : node.inputs) {
      if (id >= 0) values[static_cast<size_t>(id)].last_forward_use = static_cast<int>(p);
    }
    if (!node.in_backward) continue;
    // Backward runs in reverse order, so the earliest position is the last backward use.
    const auto mark = [&](int id) {
      if (id < 0) return;
      PlannedValue& value = values[static_cast<size_t>(id)];
      value.keep_for_backward = true;
      if (value.last_backward_use < 0 || static_cast<int>(p) < value.last_backward_use) {
        value.last_backward_use = static_cast<int>(p);
      }
    };
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.kernel->BackwardNeedsInput(i)) mark(node.inputs[i]);
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.kernel->BackwardNeedsOutput(o)) mark(node.outputs[o]);
    }
  }
}

}  // namespace autodist::exec
