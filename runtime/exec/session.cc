#include "runtime/exec/session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <deque>
#include <set>
#include <unordered_map>

#include "runtime/common/error.h"
#include "runtime/graph/graph_item.h"
#include "runtime/ops/onnx_tensor.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/sparse_gradient.h"

namespace autodist::exec {
namespace {

enum class ValueKind { kIntermediate, kFeed, kVariable, kState, kConstant };

struct Value {
  std::string name;
  ValueKind kind = ValueKind::kIntermediate;
  int producer = -1;  // node position
  std::vector<int> consumers;
  bool requires_grad = false;  // depends differentiably on a trainable variable
  bool keep_for_backward = false;
  int last_forward_use = -1;   // node position of the last consumer
  int last_backward_use = -1;  // position (in node order) of the earliest backward reader
};

struct Node {
  const onnx::NodeProto* proto = nullptr;
  std::unique_ptr<ops::NodeInfo> info;
  std::unique_ptr<ops::OpKernel> kernel;
  std::vector<int> inputs;   // value ids; -1 for an absent optional input
  std::vector<int> outputs;  // value ids; -1 for an unused optional output
  bool in_backward = false;
};

int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return 1;
}

std::string DescribeSpec(const InputSpec& spec) {
  std::vector<std::string> dims;
  for (const int64_t dim : spec.shape) dims.push_back(dim < 0 ? "?" : std::to_string(dim));
  return fmt::format("{} [{}]", tensor::DTypeName(spec.dtype), fmt::join(dims, ", "));
}

Tensor AddTensors(const Tensor& a, const Tensor& b, const std::string& what) {
  AD_CHECK(a.shape() == b.shape(), kInternal, "gradient shapes differ for '{}': {} and {}", what,
           tensor::ShapeToString(a.shape()), tensor::ShapeToString(b.shape()));
  Tensor sum(DType::kFloat32, a.shape());
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* out = sum.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) out[i] = x[i] + y[i];
  return sum;
}

}  // namespace

struct Session::Impl {
  onnx::ModelProto model;  // owns the NodeProtos the kernels' NodeInfo refer to
  std::string source;
  std::vector<Value> values;
  std::unordered_map<std::string, int> value_ids;
  std::vector<Node> nodes;     // topological order
  std::vector<Tensor> stored;  // initializer tensors (variables, state, constants) by value id
  std::vector<InputSpec> inputs;
  std::vector<int> input_ids;
  std::vector<int> output_ids;
  std::vector<std::string> output_names;
  int loss_id = -1;
  std::vector<std::string> trainable;
  std::vector<std::string> states;
  std::mt19937_64 rng;
  // Each trainable variable with the node position whose backward is the last to add to its
  // gradient (the earliest reader), latest position first: the order gradients become final.
  std::vector<std::pair<int, std::string>> gradient_final_at;

  int IdOf(const std::string& name) {
    const auto [it, inserted] = value_ids.emplace(name, static_cast<int>(values.size()));
    if (inserted) {
      Value value;
      value.name = name;
      values.push_back(std::move(value));
    }
    return it->second;
  }

  void LoadInitializers();
  void LoadInputsAndOutputs();
  void LoadNodes();
  void FindLoss(const std::string& requested);
  void PlanGradients();
  void PlanLifetimes();

  std::vector<Tensor> Forward(const Feeds& feeds, bool training, bool keep_for_backward,
                              std::vector<std::unique_ptr<ops::KernelState>>* kernel_states);
  std::map<std::string, Gradient> Backward(std::vector<Tensor>& live,
                                           std::vector<std::unique_ptr<ops::KernelState>>& states,
                                           const GradientReadyFn& on_ready);
  void BindFeeds(const Feeds& feeds, std::vector<Tensor>& live) const;
};

void Session::Impl::LoadInitializers() {
  // The compiler's variable table decides what is trainable, so runtime and Strategy agree.
  const graph::GraphItem item = graph::GraphItem::FromOnnx(model, source);
  std::set<std::string> trainable_set;
  std::set<std::string> float_set;
  for (const graph::Variable& variable : item.variables()) {
    float_set.insert(variable.name);
    if (variable.trainable) trainable_set.insert(variable.name);
  }
  for (const auto& initializer : model.graph().initializer()) {
    const int id = IdOf(initializer.name());
    Value& value = values[static_cast<size_t>(id)];
    if (trainable_set.contains(initializer.name())) {
      value.kind = ValueKind::kVariable;
      trainable.push_back(initializer.name());
    } else if (float_set.contains(initializer.name())) {
      value.kind = ValueKind::kState;
      states.push_back(initializer.name());
    } else {
      value.kind = ValueKind::kConstant;
    }
    stored.resize(values.size());
    stored[static_cast<size_t>(id)] = ops::TensorFromProto(
        initializer, fmt::format("model '{}': initializer '{}'", source, initializer.name()));
    AD_CHECK(value.kind != ValueKind::kVariable ||
                 stored[static_cast<size_t>(id)].dtype() == DType::kFloat32,
             kInvalidArgument,
             "model '{}': variable '{}' is {}; training supports float32 variables", source,
             initializer.name(), tensor::DTypeName(stored[static_cast<size_t>(id)].dtype()));
  }
}

void Session::Impl::LoadInputsAndOutputs() {
  for (const auto& input : model.graph().input()) {
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
  for (const auto& output : model.graph().output()) {
    output_ids.push_back(IdOf(output.name()));
    output_names.push_back(output.name());
  }
}

void Session::Impl::LoadNodes() {
  const int64_t opset = DefaultOpset(model);
  // Kahn's algorithm, stable in model order: ONNX requires sorted graphs, but we do not rely
  // on it.
  const auto& protos = model.graph().node();
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

  for (const int n : order) {
    const onnx::NodeProto& proto = protos[n];
    AD_CHECK(proto.domain().empty() || proto.domain() == "ai.onnx", kInvalidArgument,
             "model '{}': node '{}' uses op {} of domain '{}'; only the default ONNX domain is "
             "supported",
             source, proto.name(), proto.op_type(), proto.domain());
    Node node;
    node.proto = &proto;
    node.info = std::make_unique<ops::NodeInfo>(proto, opset);
    node.kernel = ops::KernelRegistry::Global().Create(*node.info);
    const int position = static_cast<int>(nodes.size());
    for (const auto& input : proto.input()) {
      if (input.empty()) {
        node.inputs.push_back(-1);
        continue;
      }
      const int id = IdOf(input);
      node.inputs.push_back(id);
      values[static_cast<size_t>(id)].consumers.push_back(position);
    }
    for (const auto& output : proto.output()) {
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
  stored.resize(values.size());
  for (const Value& value : values) {
    AD_CHECK(value.kind != ValueKind::kIntermediate || value.producer >= 0, kInvalidArgument,
             "model '{}': tensor '{}' is read but is neither produced, an input nor an "
             "initializer",
             source, value.name);
  }
}

void Session::Impl::FindLoss(const std::string& requested) {
  std::vector<std::string> described;
  std::vector<int> scalar_floats;
  int named_loss = -1;
  for (const auto& output : model.graph().output()) {
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

void Session::Impl::PlanGradients() {
  for (Value& value : values) value.requires_grad = value.kind == ValueKind::kVariable;
  for (const Node& node : nodes) {
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
    Node& node = nodes[p];
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

void Session::Impl::PlanLifetimes() {
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
    const Node& node = nodes[p];
    for (const int id : node.inputs) {
      if (id >= 0) values[static_cast<size_t>(id)].last_forward_use = static_cast<int>(p);
    }
    if (!node.in_backward) continue;
    // Backward runs in reverse order, so the earliest position is the last backward use.
    const auto mark = [&](int id) {
      if (id < 0) return;
      Value& value = values[static_cast<size_t>(id)];
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

void Session::Impl::BindFeeds(const Feeds& feeds, std::vector<Tensor>& live) const {
  std::vector<std::string> expected;
  for (const InputSpec& spec : inputs) expected.push_back(spec.name + " " + DescribeSpec(spec));
  for (const auto& [name, tensor] : feeds) {
    const auto it = value_ids.find(name);
    AD_CHECK(
        it != value_ids.end() && values[static_cast<size_t>(it->second)].kind == ValueKind::kFeed,
        kInvalidArgument, "model '{}': '{}' is not an input of the graph; inputs: {}", source, name,
        fmt::join(expected, ", "));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = inputs[i];
    const auto it = feeds.find(spec.name);
    AD_CHECK(it != feeds.end(), kInvalidArgument, "model '{}': input '{}' ({}) is not fed", source,
             spec.name, DescribeSpec(spec));
    const Tensor& fed = it->second;
    bool matches = fed.dtype() == spec.dtype && fed.rank() == spec.shape.size();
    for (size_t d = 0; matches && d < spec.shape.size(); ++d) {
      matches = spec.shape[d] < 0 || spec.shape[d] == fed.dim(d);
    }
    AD_CHECK(matches, kInvalidArgument, "model '{}': input '{}' expects {} but the data is {} {}",
             source, spec.name, DescribeSpec(spec), tensor::DTypeName(fed.dtype()),
             tensor::ShapeToString(fed.shape()));
    live[static_cast<size_t>(input_ids[i])] = fed;
  }
}

std::vector<Tensor> Session::Impl::Forward(
    const Feeds& feeds, bool training, bool keep_for_backward,
    std::vector<std::unique_ptr<ops::KernelState>>* kernel_states) {
  std::vector<Tensor> live(values.size());
  for (size_t id = 0; id < values.size(); ++id) {
    if (stored[id].defined()) live[id] = stored[id];
  }
  BindFeeds(feeds, live);
  std::vector<bool> pinned(values.size(), false);  // survive the forward pass
  for (const int id : output_ids) pinned[static_cast<size_t>(id)] = true;
  pinned[static_cast<size_t>(loss_id)] = true;

  for (size_t p = 0; p < nodes.size(); ++p) {
    Node& node = nodes[p];
    std::vector<const Tensor*> in;
    in.reserve(node.inputs.size());
    for (const int id : node.inputs)
      in.push_back(id < 0 ? nullptr : &live[static_cast<size_t>(id)]);
    ops::ForwardContext ctx(std::move(in), node.outputs.size(), training, &rng, node.info.get());
    node.kernel->Forward(ctx);
    std::unique_ptr<ops::KernelState> state = ctx.take_state();
    std::vector<Tensor> produced = ctx.take_outputs();
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o] >= 0) live[static_cast<size_t>(node.outputs[o])] = std::move(produced[o]);
    }
    if (training) {
      for (const auto& [output, input] : node.kernel->StateUpdates()) {
        const int target = input < node.inputs.size() ? node.inputs[input] : -1;
        const int source_id = output < node.outputs.size() ? node.outputs[output] : -1;
        if (target >= 0 && source_id >= 0 &&
            values[static_cast<size_t>(target)].kind == ValueKind::kState &&
            live[static_cast<size_t>(source_id)].defined()) {
          stored[static_cast<size_t>(target)] = live[static_cast<size_t>(source_id)];
        }
      }
    }
    if (keep_for_backward && node.in_backward) (*kernel_states)[p] = std::move(state);
    // Free what no later node and no backward step reads.
    for (const int id : node.inputs) {
      if (id < 0) continue;
      const Value& value = values[static_cast<size_t>(id)];
      if (value.last_forward_use == static_cast<int>(p) && !pinned[static_cast<size_t>(id)] &&
          !(keep_for_backward && value.keep_for_backward) &&
          (value.kind == ValueKind::kIntermediate || value.kind == ValueKind::kFeed)) {
        live[static_cast<size_t>(id)] = Tensor();
      }
    }
  }
  return live;
}

std::map<std::string, Gradient> Session::Impl::Backward(
    std::vector<Tensor>& live, std::vector<std::unique_ptr<ops::KernelState>>& kernel_states,
    const GradientReadyFn& on_ready) {
  const Tensor& loss = live[static_cast<size_t>(loss_id)];
  AD_CHECK(loss.dtype() == DType::kFloat32 && loss.numel() == 1, kInvalidArgument,
           "model '{}': the loss '{}' must be a float scalar, got {} {}", source,
           values[static_cast<size_t>(loss_id)].name, tensor::DTypeName(loss.dtype()),
           tensor::ShapeToString(loss.shape()));
  std::vector<Tensor> dense(values.size());
  std::vector<std::vector<ops::SparseGradient>> sparse(values.size());
  dense[static_cast<size_t>(loss_id)] = Tensor::Full(loss.shape(), 1.0F);

  const auto accumulate = [&](int id, Tensor grad) {
    Tensor& slot = dense[static_cast<size_t>(id)];
    slot = slot.defined() ? AddTensors(slot, grad, values[static_cast<size_t>(id)].name)
                          : std::move(grad);
  };

  std::map<std::string, Gradient> gradients;
  // Gradients become final in the order of gradient_final_at; each is handed out as soon as the
  // backward pass has left its earliest reader, so a synchronizer can start sending it.
  size_t next_final = 0;
  const auto finalize_down_to = [&](int position) {
    for (; next_final < gradient_final_at.size() && gradient_final_at[next_final].first >= position;
         ++next_final) {
      const std::string& name = gradient_final_at[next_final].second;
      const auto id = static_cast<size_t>(value_ids.at(name));
      Gradient gradient;
      if (!sparse[id].empty() && !dense[id].defined()) {
        gradient.sparse = ops::MergeSparse(sparse[id]);
      } else if (!sparse[id].empty()) {
        gradient.dense = AddTensors(dense[id], ops::Densify(ops::MergeSparse(sparse[id])), name);
      } else if (dense[id].defined()) {
        gradient.dense = std::move(dense[id]);
      } else {
        continue;  // the loss does not depend on it
      }
      const auto [it, inserted] = gradients.emplace(name, std::move(gradient));
      if (on_ready) on_ready(name, it->second);
    }
  };

  for (size_t p = nodes.size(); p-- > 0;) {
    finalize_down_to(static_cast<int>(p) + 1);
    Node& node = nodes[p];
    if (!node.in_backward) continue;
    // A sparse gradient reaching a pass-through node (Identity) moves on unchanged.
    if (node.kernel->PassesGradientThrough() && node.outputs.size() == 1 &&
        node.inputs.size() == 1) {
      const auto out = static_cast<size_t>(node.outputs[0]);
      for (auto& part : sparse[out])
        sparse[static_cast<size_t>(node.inputs[0])].push_back(std::move(part));
      sparse[out].clear();
    }
    std::vector<const Tensor*> output_grads;
    bool any = false;
    for (const int id : node.outputs) {
      if (id < 0) {
        output_grads.push_back(nullptr);
        continue;
      }
      auto& parts = sparse[static_cast<size_t>(id)];
      if (!parts.empty()) {
        accumulate(id, ops::Densify(ops::MergeSparse(parts)));
        parts.clear();
      }
      const Tensor& grad = dense[static_cast<size_t>(id)];
      output_grads.push_back(grad.defined() ? &grad : nullptr);
      any |= grad.defined();
    }
    if (!any) continue;

    std::vector<const Tensor*> in;
    std::vector<bool> needs;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int id = node.inputs[i];
      const bool available = id >= 0 && live[static_cast<size_t>(id)].defined();
      in.push_back(available ? &live[static_cast<size_t>(id)] : nullptr);
      needs.push_back(id >= 0 && values[static_cast<size_t>(id)].requires_grad &&
                      node.kernel->IsDifferentiable(i));
    }
    std::vector<const Tensor*> out;
    for (const int id : node.outputs) {
      out.push_back(id >= 0 && live[static_cast<size_t>(id)].defined()
                        ? &live[static_cast<size_t>(id)]
                        : nullptr);
    }
    ops::BackwardContext ctx(in, out, output_grads, needs, kernel_states[p].get(), node.info.get());
    node.kernel->Backward(ctx);
    std::vector<Tensor> grads = ctx.take_input_grads();
    std::vector<std::unique_ptr<ops::SparseGradient>> sparse_grads = ctx.take_sparse_grads();
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!needs[i]) continue;
      const int id = node.inputs[i];
      if (sparse_grads[i]) {
        sparse[static_cast<size_t>(id)].push_back(std::move(*sparse_grads[i]));
      } else if (grads[i].defined()) {
        AD_CHECK(grads[i].shape() == live[static_cast<size_t>(id)].shape() ||
                     !live[static_cast<size_t>(id)].defined(),
                 kInternal, "{}: gradient of input {} has shape {}, the input {}",
                 node.info->Describe(), i, tensor::ShapeToString(grads[i].shape()),
                 tensor::ShapeToString(live[static_cast<size_t>(id)].shape()));
        accumulate(id, std::move(grads[i]));
      }
    }
    // This node's output gradients and state are consumed; forward values read for the last
    // time are released.
    for (const int id : node.outputs) {
      if (id >= 0) dense[static_cast<size_t>(id)] = Tensor();
    }
    kernel_states[p].reset();
    for (const int id : node.inputs) {
      if (id >= 0 && values[static_cast<size_t>(id)].last_backward_use == static_cast<int>(p) &&
          values[static_cast<size_t>(id)].kind == ValueKind::kIntermediate && id != loss_id) {
        live[static_cast<size_t>(id)] = Tensor();
      }
    }
  }

  finalize_down_to(-1);
  return gradients;
}

Session::Session(const onnx::ModelProto& model, const std::string& source, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = model;
  impl_->source = source;
  impl_->rng.seed(options.seed);
  impl_->LoadInitializers();
  impl_->LoadInputsAndOutputs();
  impl_->LoadNodes();
  impl_->FindLoss(options.loss);
  impl_->PlanGradients();
  impl_->PlanLifetimes();
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::map<std::string, Tensor> Session::Run(const Feeds& feeds, bool training,
                                           const std::vector<std::string>& fetch) {
  std::vector<Tensor> live = impl_->Forward(feeds, training, false, nullptr);
  std::map<std::string, Tensor> out;
  if (fetch.empty()) {
    for (const int id : impl_->output_ids)
      out[impl_->values[static_cast<size_t>(id)].name] = live[static_cast<size_t>(id)];
    return out;
  }
  for (const std::string& name : fetch) {
    const auto it = impl_->value_ids.find(name);
    AD_CHECK(it != impl_->value_ids.end() && live[static_cast<size_t>(it->second)].defined(),
             kInvalidArgument, "model '{}': cannot fetch '{}': not a graph output", impl_->source,
             name);
    out[name] = live[static_cast<size_t>(it->second)];
  }
  return out;
}

Session::StepResult Session::ForwardBackward(const Feeds& feeds, const GradientReadyFn& on_ready) {
  std::vector<std::unique_ptr<ops::KernelState>> kernel_states(impl_->nodes.size());
  std::vector<Tensor> live = impl_->Forward(feeds, true, true, &kernel_states);
  StepResult result;
  for (const int id : impl_->output_ids) {
    result.outputs[impl_->values[static_cast<size_t>(id)].name] = live[static_cast<size_t>(id)];
  }
  result.gradients = impl_->Backward(live, kernel_states, on_ready);
  result.loss = static_cast<float>(live[static_cast<size_t>(impl_->loss_id)].GetAsDouble(0));
  return result;
}

const std::vector<InputSpec>& Session::inputs() const { return impl_->inputs; }
const std::string& Session::loss_name() const {
  return impl_->values[static_cast<size_t>(impl_->loss_id)].name;
}
const std::vector<std::string>& Session::output_names() const { return impl_->output_names; }
const std::vector<std::string>& Session::trainable_names() const { return impl_->trainable; }
const std::vector<std::string>& Session::state_names() const { return impl_->states; }

Tensor& Session::variable(const std::string& name) {
  const auto it = impl_->value_ids.find(name);
  AD_CHECK(it != impl_->value_ids.end() &&
               impl_->values[static_cast<size_t>(it->second)].kind == ValueKind::kVariable,
           kNotFound, "model '{}': no trainable variable '{}'", impl_->source, name);
  return impl_->stored[static_cast<size_t>(it->second)];
}

Tensor& Session::state(const std::string& name) {
  const auto it = impl_->value_ids.find(name);
  AD_CHECK(it != impl_->value_ids.end() &&
               impl_->values[static_cast<size_t>(it->second)].kind == ValueKind::kState,
           kNotFound, "model '{}': no state variable '{}'", impl_->source, name);
  return impl_->stored[static_cast<size_t>(it->second)];
}

std::mt19937_64& Session::rng() { return impl_->rng; }

}  // namespace autodist::exec
