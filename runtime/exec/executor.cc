#include "runtime/exec/executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/common/error.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::exec {
namespace {

std::string DescribeSpec(const InputSpec& spec) {
  std::vector<std::string> dims;
  for (const int64_t dim : spec.shape) dims.push_back(dim < 0 ? "?" : std::to_string(dim));
  return fmt::format("{} [{}]", tensor::DTypeName(spec.dtype), fmt::join(dims, ", "));
}

// a + b on the host, same shapes.
Tensor AddOnHost(const Tensor& a, const Tensor& b) {
  Tensor sum(DType::kFloat32, a.shape());
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* out = sum.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) out[i] = x[i] + y[i];
  return sum;
}

// The sparse parts of one value's gradient merged into one coalesced gradient on `device`. One
// part (an embedding read by one Gather) stays as it is, wherever it is; several are merged on
// the host (tensor::MergeSparse), and on a GPU put back there.
tensor::SparseGradient MergedSparse(std::vector<tensor::SparseGradient>& parts,
                                    const tensor::Device& device) {
  if (parts.size() == 1) return std::move(parts.front());
  if (device.is_cpu()) return tensor::MergeSparse(parts);
  std::vector<tensor::SparseGradient> host;
  host.reserve(parts.size());
  for (const tensor::SparseGradient& part : parts) {
    host.push_back(tensor::SparseTo(part, tensor::Device::Cpu()));
  }
  return tensor::SparseTo(tensor::MergeSparse(host), device);
}

// The same made dense, on `device` (where a sparse gradient meets a dense one, or an op that
// takes dense gradients only).
Tensor Densified(const std::vector<tensor::SparseGradient>& parts, const tensor::Device& device) {
  std::vector<tensor::SparseGradient> host;
  host.reserve(parts.size());
  for (const tensor::SparseGradient& part : parts) {
    host.push_back(tensor::SparseTo(part, tensor::Device::Cpu()));
  }
  return tensor::Densify(tensor::MergeSparse(host)).To(device);
}

}  // namespace

Executor::Executor(const ExecutionPlan& plan, std::vector<Tensor>& stored, std::mt19937_64& rng)
    : plan_(plan), stored_(stored), rng_(rng) {}

Tensor Executor::Sum(const Tensor& a, const Tensor& b, const std::string& what) const {
  AD_CHECK(a.shape() == b.shape(), kInternal, "gradient shapes differ for '{}': {} and {}", what,
           tensor::ShapeToString(a.shape()), tensor::ShapeToString(b.shape()));
  if (plan_.device.is_cpu()) return AddOnHost(a, b);
  ops::ForwardContext ctx({&a, &b}, 1, false, &rng_, plan_.accumulate_info.get());
  plan_.accumulate->Forward(ctx);
  return std::move(ctx.take_outputs()[0]);
}

void Executor::BindFeeds(const Feeds& feeds, std::vector<Tensor>& live) const {
  const auto& inputs = plan_.inputs;
  const auto& input_ids = plan_.input_ids;
  const auto& value_ids = plan_.value_ids;
  const auto& values = plan_.values;
  const auto& source = plan_.source;
  std::vector<std::string> expected;
  expected.reserve(inputs.size());
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
    // Fed data comes from the host; on another device it is copied there.
    live[static_cast<size_t>(input_ids[i])] = fed.To(plan_.device);
  }
}

std::vector<Tensor> Executor::Forward(const Feeds& feeds, bool training,
                                      KernelStates* kernel_states) {
  const bool keep_for_backward = kernel_states != nullptr;
  const auto& values = plan_.values;
  const auto& nodes = plan_.nodes;
  const auto& output_ids = plan_.output_ids;
  const auto& loss_id = plan_.loss_id;
  std::vector<Tensor> live(values.size());
  for (size_t id = 0; id < values.size(); ++id) {
    if (stored_[id].defined()) live[id] = stored_[id];
  }
  BindFeeds(feeds, live);
  std::vector<bool> pinned(values.size(), false);  // survive the forward pass
  for (const int id : output_ids) pinned[static_cast<size_t>(id)] = true;
  pinned[static_cast<size_t>(loss_id)] = true;

  for (size_t p = 0; p < nodes.size(); ++p) {
    const PlannedNode& node = nodes[p];
    std::vector<const Tensor*> in;
    in.reserve(node.inputs.size());
    for (const int id : node.inputs)
      in.push_back(id < 0 ? nullptr : &live[static_cast<size_t>(id)]);
    ops::ForwardContext ctx(std::move(in), node.outputs.size(), training, &rng_, node.info.get());
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
          stored_[static_cast<size_t>(target)] = live[static_cast<size_t>(source_id)];
        }
      }
    }
    if (keep_for_backward && node.in_backward) (*kernel_states)[p] = std::move(state);
    // Free what no later node and no backward step reads.
    for (const int id : node.inputs) {
      if (id < 0) continue;
      const PlannedValue& value = values[static_cast<size_t>(id)];
      if (value.last_forward_use == static_cast<int>(p) && !pinned[static_cast<size_t>(id)] &&
          !(keep_for_backward && value.keep_for_backward) &&
          (value.kind == ValueKind::kIntermediate || value.kind == ValueKind::kFeed)) {
        live[static_cast<size_t>(id)] = Tensor();
      }
    }
  }
  return live;
}

std::map<std::string, Gradient> Executor::Backward(std::vector<Tensor>& live,
                                                   KernelStates& kernel_states,
                                                   const GradientReadyFn& on_ready) const {
  const auto& values = plan_.values;
  const auto& value_ids = plan_.value_ids;
  const auto& nodes = plan_.nodes;
  const auto& loss_id = plan_.loss_id;
  const auto& gradient_final_at = plan_.gradient_final_at;
  const auto& source = plan_.source;
  const Tensor& loss = live[static_cast<size_t>(loss_id)];
  AD_CHECK(loss.dtype() == DType::kFloat32 && loss.numel() == 1, kInvalidArgument,
           "model '{}': the loss '{}' must be a float scalar, got {} {}", source,
           values[static_cast<size_t>(loss_id)].name, tensor::DTypeName(loss.dtype()),
           tensor::ShapeToString(loss.shape()));
  std::vector<Tensor> dense(values.size());
  std::vector<std::vector<tensor::SparseGradient>> sparse(values.size());
  dense[static_cast<size_t>(loss_id)] = Tensor::Full(loss.shape(), 1.0F).To(plan_.device);

  const auto accumulate = [&](int id, Tensor grad) {
    Tensor& slot = dense[static_cast<size_t>(id)];
    slot = slot.defined() ? Sum(slot, grad, values[static_cast<size_t>(id)].name) : std::move(grad);
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
        gradient.sparse = MergedSparse(sparse[id], plan_.device);
      } else if (!sparse[id].empty()) {
        gradient.dense = Sum(dense[id], Densified(sparse[id], plan_.device), name);
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
    const PlannedNode& node = nodes[p];
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
        accumulate(id, Densified(parts, plan_.device));
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
    std::vector<std::unique_ptr<tensor::SparseGradient>> sparse_grads = ctx.take_sparse_grads();
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

}  // namespace autodist::exec
