#include "runtime/optim/optimizer_state.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>

#include "runtime/common/error.h"

namespace autodist::optim::detail {
namespace {

constexpr const char* kStepSlot = "step";

tensor::Tensor StepTensor(int64_t step) { return tensor::Tensor::FromVector<int64_t>({}, {step}); }

}  // namespace

StateSchema::StateSchema(const OptimizerOptions& options, bool counts_steps,
                         std::vector<BufferSlot> slots)
    : optimizer_(options.name),
      description_(DescribeOptimizerOptions(options)),
      counts_steps_(counts_steps),
      slots_(std::move(slots)) {
  // BeginStep hands the buffers out in a fixed-size array.
  AD_CHECK(slots_.size() <= kMaxBufferSlots, kInternal,
           "optimizer {} has {} state buffers, more than the {} an update can take", optimizer_,
           slots_.size(), kMaxBufferSlots);
}

std::string StateSchema::SlotList() const {
  std::vector<std::string> names;
  if (counts_steps_) names.emplace_back(kStepSlot);
  for (const auto& slot : slots_) names.push_back(slot.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::map<std::string, tensor::Tensor> StateSchema::Save(
    const std::map<std::string, VariableState>& states) const {
  std::map<std::string, tensor::Tensor> out;
  for (const auto& [name, state] : states) {
    if (counts_steps_) out.emplace(name + "/" + kStepSlot, StepTensor(state.step));
    for (size_t i = 0; i < slots_.size(); ++i) {
      out.emplace(name + "/" + slots_[i].name, state.buffers[i].Clone());
    }
  }
  return out;
}

std::map<std::string, VariableState> StateSchema::Load(
    const std::map<std::string, tensor::Tensor>& state) const {
  const std::string& optimizer = optimizer_;
  AD_CHECK(stateful() || state.empty(), kInvalidArgument,
           "optimizer {} keeps no state with these options ({}), but the state to load has "
           "'{}'",
           optimizer, description_, state.empty() ? "" : state.begin()->first);

  // Group by variable (the slot follows the last '/': variable names may contain '/').
  std::map<std::string, std::map<std::string, const tensor::Tensor*>> by_variable;
  for (const auto& [key, value] : state) {
    const size_t slash = key.rfind('/');
    AD_CHECK(slash != std::string::npos && slash > 0, kInvalidArgument,
             "optimizer {}: state key '{}' is not '<variable>/<slot>'", optimizer, key);
    const std::string slot = key.substr(slash + 1);
    bool known = counts_steps_ && slot == kStepSlot;
    for (const auto& candidate : slots_) known = known || candidate.name == slot;
    AD_CHECK(known, kInvalidArgument,
             "optimizer {}: state '{}' has slot '{}', which {} does not keep; its slots: {}",
             optimizer, key, slot, description_, SlotList());
    AD_CHECK(value.defined(), kInvalidArgument, "optimizer {}: state '{}' is an undefined tensor",
             optimizer, key);
    by_variable[key.substr(0, slash)][slot] = &value;
  }

  std::map<std::string, VariableState> loaded;
  for (const auto& [variable, slots] : by_variable) {
    VariableState variable_state;
    if (counts_steps_) {
      const auto it = slots.find(kStepSlot);
      AD_CHECK(it != slots.end(), kInvalidArgument,
               "optimizer {}: state for variable '{}' lacks slot 'step' (slots: {})", optimizer,
               variable, SlotList());
      const tensor::Tensor& step = *it->second;
      AD_CHECK(step.dtype() == tensor::DType::kInt64 && step.numel() == 1, kInvalidArgument,
               "optimizer {}: state '{}/step' must be an int64 scalar, got {} {}", optimizer,
               variable, tensor::DTypeName(step.dtype()), tensor::ShapeToString(step.shape()));
      variable_state.step = step.data<int64_t>()[0];
      AD_CHECK(variable_state.step >= 0, kInvalidArgument,
               "optimizer {}: state '{}/step' must be >= 0, got {}", optimizer, variable,
               variable_state.step);
    }
    const tensor::Shape* shape = nullptr;
    for (const auto& slot : slots_) {
      const auto it = slots.find(slot.name);
      AD_CHECK(it != slots.end(), kInvalidArgument,
               "optimizer {}: state for variable '{}' lacks slot '{}' (slots: {})", optimizer,
               variable, slot.name, SlotList());
      const tensor::Tensor& buffer = *it->second;
      AD_CHECK(buffer.dtype() == tensor::DType::kFloat32, kInvalidArgument,
               "optimizer {}: state '{}/{}' must be float32, got {}", optimizer, variable,
               slot.name, tensor::DTypeName(buffer.dtype()));
      AD_CHECK(shape == nullptr || buffer.shape() == *shape, kInvalidArgument,
               "optimizer {}: state '{}/{}' has shape {}, other slots of '{}' have {}", optimizer,
               variable, slot.name, tensor::ShapeToString(buffer.shape()), variable,
               shape == nullptr ? "" : tensor::ShapeToString(*shape));
      shape = &buffer.shape();
      variable_state.buffers.push_back(buffer.Clone());
    }
    loaded.emplace(variable, std::move(variable_state));
  }
  return loaded;
}

StatefulOptimizer::StatefulOptimizer(OptimizerOptions options, bool counts_steps,
                                     std::vector<BufferSlot> slots)
    : Optimizer(std::move(options)), schema_(options_, counts_steps, std::move(slots)) {}

VariableState& StatefulOptimizer::StateFor(const std::string& name, const tensor::Tensor& param,
                                           bool* created) {
  const std::vector<BufferSlot>& slots = schema_.slots();
  auto it = states_.find(name);
  *created = it == states_.end();
  if (*created) {
    VariableState state;
    for (const auto& slot : slots) {
      state.buffers.push_back(slot.initial == 0.0F
                                  ? tensor::Tensor::Zeros(tensor::DType::kFloat32, param.shape())
                                  : tensor::Tensor::Full(param.shape(), slot.initial));
    }
    it = states_.emplace(name, std::move(state)).first;
    return it->second;
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const tensor::Tensor& buffer = it->second.buffers[i];
    AD_CHECK(buffer.shape() == param.shape(), kInvalidArgument,
             "optimizer {}: state '{}/{}' has shape {} but variable '{}' has shape {}",
             options_.name, name, slots[i].name, tensor::ShapeToString(buffer.shape()), name,
             tensor::ShapeToString(param.shape()));
  }
  return it->second;
}

StepState StatefulOptimizer::BeginStep(const std::string& name, const tensor::Tensor& param) {
  StepState begun;
  if (!schema_.stateful()) return begun;
  VariableState& state = StateFor(name, param, &begun.first);
  if (schema_.counts_steps()) begun.step = ++state.step;
  for (size_t i = 0; i < schema_.slots().size(); ++i) begun.buffers[i] = state.buffer(i);
  return begun;
}

std::map<std::string, tensor::Tensor> StatefulOptimizer::SaveState() const {
  return schema_.Save(states_);
}

void StatefulOptimizer::LoadState(const std::map<std::string, tensor::Tensor>& state) {
  states_ = schema_.Load(state);
}

}  // namespace autodist::optim::detail
