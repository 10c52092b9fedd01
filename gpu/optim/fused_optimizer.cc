#include "gpu/optim/fused_optimizer.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <set>
#include <utility>

#include "gpu/device/cuda_error.h"
#include "gpu/optim/multi_tensor_update.h"
#include "runtime/common/error.h"
#include "runtime/optim/optimizer_state.h"
#include "runtime/optim/rules/adagrad.h"
#include "runtime/optim/rules/adam.h"
#include "runtime/optim/rules/rmsprop.h"
#include "runtime/optim/rules/sgd.h"
#include "runtime/optim/rules/update_rule.h"

namespace autodist::gpu {
namespace {

using optim::detail::StateSchema;
using optim::detail::StepState;
using optim::detail::UpdateRule;
using optim::detail::VariableState;

// A variable's state on the device.
struct DeviceState {
  int64_t step = 0;
  tensor::Shape shape;
  std::vector<DeviceBuffer> slots;  // in the rule's slot order
};

template <UpdateRule Rule>
class FusedRuleOptimizer final : public FusedOptimizer {
 public:
  FusedRuleOptimizer(const optim::OptimizerOptions& options, DevicePool& pool, cudaStream_t stream)
      : options_(options),
        schema_(options, Rule::kCountsSteps, Rule::Slots(options)),
        pool_(pool),
        stream_(stream) {}

  void Step(const std::vector<DeviceVariable>& variables) override {
    // The variables of one launch share a step count and whether their state is new (SGD's
    // momentum buffer starts as the gradient): in a run, one group from the second step on.
    std::map<std::pair<int64_t, bool>, std::vector<detail::UpdateTarget>> groups;
    Check(variables);  // before any state changes
    for (const DeviceVariable& variable : variables) {
      const int64_t numel = tensor::NumElements(variable.shape);
      if (numel == 0) continue;
      bool created = false;
      DeviceState* state = StateFor(variable, &created);
      detail::UpdateTarget target{.param = variable.param, .grad = variable.grad, .numel = numel};
      int64_t step = 0;
      if (state != nullptr) {
        if (schema_.counts_steps()) step = ++state->step;
        for (size_t s = 0; s < state->slots.size(); ++s) {
          target.slots[s] = state->slots[s].as<float>();
        }
      }
      groups[{step, created}].push_back(target);
    }
    size_t index = 0;
    for (auto& [key, targets] : groups) {
      StepState state;
      state.step = key.first;
      state.first = key.second;
      const Rule rule = Rule::ForStep(options_, state);
      if (index == plans_.size()) plans_.emplace_back();
      std::unique_ptr<detail::UpdatePlan>& plan = plans_[index++];
      if (plan == nullptr || !plan->Covers(targets)) {
        plan = std::make_unique<detail::UpdatePlan>(std::move(targets), pool_, stream_);
      }
      detail::LaunchUpdate(rule, *plan, stream_);
    }
  }

  bool UpdatesOnlyPresentRows() const override {
    return Rule::RowWiseExact(options_) || options_.lazy_sparse;
  }

  void StepRows(const DeviceVariable& variable, const int64_t* rows, int64_t count) override {
    Check({variable});
    const int64_t numel = tensor::NumElements(variable.shape);
    bool created = false;
    DeviceState* state = numel == 0 ? nullptr : StateFor(variable, &created);
    detail::UpdateTarget target{.param = variable.param, .grad = variable.grad, .numel = numel};
    StepState step;
    step.first = created;
    if (state != nullptr) {
      if (schema_.counts_steps()) step.step = ++state->step;
      for (size_t s = 0; s < state->slots.size(); ++s) {
        target.slots[s] = state->slots[s].as<float>();
      }
    }
    if (numel == 0 || count == 0) return;
    const int64_t row_elements = numel / variable.shape.front();
    detail::LaunchRowUpdate(Rule::ForStep(options_, step), target, rows, count, row_elements,
                            stream_);
  }

  void set_learning_rate(double lr) override { options_.lr = lr; }
  double learning_rate() const override { return options_.lr; }

  std::map<std::string, tensor::Tensor> SaveState() const override {
    std::map<std::string, VariableState> host;
    for (const auto& [name, state] : states_) {
      VariableState& out = host[name];
      out.step = state.step;
      for (const DeviceBuffer& slot : state.slots) {
        tensor::Tensor copy(tensor::DType::kFloat32, state.shape);
        CopyAsync(copy.raw(), slot.data(), copy.nbytes(), stream_,
                  "copying optimizer state to the host");
        out.buffers.push_back(std::move(copy));
      }
    }
    CheckCuda(cudaStreamSynchronize(stream_), "waiting for optimizer state to reach the host");
    return schema_.Save(host);
  }

  void LoadState(const std::map<std::string, tensor::Tensor>& state) override {
    std::map<std::string, VariableState> host = schema_.Load(state);
    std::map<std::string, DeviceState> loaded;
    for (auto& [name, variable] : host) {
      DeviceState& out = loaded[name];
      out.step = variable.step;
      if (!variable.buffers.empty()) out.shape = variable.buffers.front().shape();
      for (const tensor::Tensor& buffer : variable.buffers) {
        DeviceBuffer slot = pool_.Allocate(std::max<size_t>(buffer.nbytes(), 1), stream_);
        CopyAsync(slot.data(), buffer.raw(), buffer.nbytes(), stream_,
                  "copying optimizer state to the device");
        out.slots.push_back(std::move(slot));
      }
    }
    // The host copies must outlive the (pageable, so already finished) copies; wait anyway so
    // that the state is on the device when LoadState returns.
    CheckCuda(cudaStreamSynchronize(stream_), "waiting for optimizer state to reach the device");
    states_ = std::move(loaded);
    plans_.clear();
  }

 private:
  void Check(const std::vector<DeviceVariable>& variables) const {
    std::set<std::string> seen;
    for (const DeviceVariable& variable : variables) {
      AD_CHECK(seen.insert(variable.name).second, kInvalidArgument,
               "optimizer {}: variable '{}' appears twice in one step", options_.name,
               variable.name);
      AD_CHECK(variable.param != nullptr && variable.grad != nullptr, kInvalidArgument,
               "optimizer {}: variable '{}' has no {} on the device", options_.name, variable.name,
               variable.param == nullptr ? "value" : "gradient");
      const auto it = states_.find(variable.name);
      // Loaded state carries its buffers' shape; a configuration without buffers has none.
      AD_CHECK(
          it == states_.end() || it->second.slots.empty() || it->second.shape == variable.shape,
          kInvalidArgument,
          "optimizer {}: state of '{}' has shape {} but the variable has shape {}", options_.name,
          variable.name, it == states_.end() ? "" : tensor::ShapeToString(it->second.shape),
          tensor::ShapeToString(variable.shape));
    }
  }

  // The state of `variable`, created on its first update (null when the configuration keeps
  // none).
  DeviceState* StateFor(const DeviceVariable& variable, bool* created) {
    if (!schema_.stateful()) return nullptr;
    auto it = states_.find(variable.name);
    *created = it == states_.end();
    if (!*created) return &it->second;
    DeviceState state;
    state.shape = variable.shape;
    const int64_t numel = tensor::NumElements(variable.shape);
    for (const auto& slot : schema_.slots()) {
      DeviceBuffer buffer = pool_.Allocate(static_cast<size_t>(numel) * sizeof(float), stream_);
      detail::FillAsync(buffer.as<float>(), numel, slot.initial, stream_);
      state.slots.push_back(std::move(buffer));
    }
    return &states_.emplace(variable.name, std::move(state)).first->second;
  }

  optim::OptimizerOptions options_;
  StateSchema schema_;
  DevicePool& pool_;
  cudaStream_t stream_;
  std::map<std::string, DeviceState> states_;
  std::vector<std::unique_ptr<detail::UpdatePlan>> plans_;  // one per launch group, reused
};

}  // namespace

std::unique_ptr<FusedOptimizer> MakeFusedOptimizer(const optim::OptimizerOptions& options,
                                                   DevicePool& pool, cudaStream_t stream) {
  optim::ValidateOptimizerOptions(options);
  const std::string& name = options.name;
  using optim::detail::AdagradRule;
  using optim::detail::AdamRule;
  using optim::detail::RmspropRule;
  using optim::detail::SgdRule;
  if (name == "sgd") return std::make_unique<FusedRuleOptimizer<SgdRule>>(options, pool, stream);
  if (name == "adam" || name == "adamw") {
    return std::make_unique<FusedRuleOptimizer<AdamRule>>(options, pool, stream);
  }
  if (name == "adagrad") {
    return std::make_unique<FusedRuleOptimizer<AdagradRule>>(options, pool, stream);
  }
  return std::make_unique<FusedRuleOptimizer<RmspropRule>>(options, pool, stream);
}

}  // namespace autodist::gpu
