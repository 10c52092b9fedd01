// Internal: the per-variable state every stateful optimizer keeps (a step count and named
// float32 buffers the shape of the variable), with checkpoint save/load and its validation, and
// what one update takes of it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/optim/optimizer.h"

namespace autodist::optim::detail {

// A state buffer and the value it starts at (Adagrad's sum starts at
// initial_accumulator_value, everything else at zero).
struct BufferSlot {
  std::string name;
  float initial = 0.0F;
};

// The most buffers a variable's state has (Adam with amsgrad, RMSprop centered with momentum).
inline constexpr size_t kMaxBufferSlots = 3;

// A variable's state buffers in slot order, all at one element offset; null past its last slot.
using BufferPointers = std::array<float*, kMaxBufferSlots>;

// What one update sees of its variable's state (StatefulOptimizer::BeginStep).
struct StepState {
  int64_t step = 0;          // this update's number, from 1, when steps are counted; else 0
  bool first = false;        // the state was created by this update
  BufferPointers buffers{};  // all null in a configuration without state
};

struct VariableState {
  int64_t step = 0;                     // updates taken (slot "step"), when counted
  std::vector<tensor::Tensor> buffers;  // in the order of the optimizer's BufferSlots
  float* buffer(size_t i) { return buffers[i].data<float>(); }
};

// What a configuration of an optimizer keeps per variable (a step count, when counted, and its
// buffer slots), and the checkpoint form of that state: tensors keyed "<variable>/<slot>". The
// CPU optimizers and the GPU's fused ones (gpu/optim/) keep the same state in this form.
class StateSchema {
 public:
  StateSchema(const OptimizerOptions& options, bool counts_steps, std::vector<BufferSlot> slots);

  bool counts_steps() const { return counts_steps_; }
  const std::vector<BufferSlot>& slots() const { return slots_; }
  // Whether this configuration keeps any state (SGD without momentum does not).
  bool stateful() const { return counts_steps_ || !slots_.empty(); }

  // The checkpoint form of `states` (buffers copied).
  std::map<std::string, tensor::Tensor> Save(
      const std::map<std::string, VariableState>& states) const;
  // The states in `state`, validated (copies). Throws InvalidArgument on a slot this
  // configuration does not keep, a missing slot, or a wrong dtype or shape.
  std::map<std::string, VariableState> Load(
      const std::map<std::string, tensor::Tensor>& state) const;

  // "step, exp_avg, exp_avg_sq": the slots of this configuration, for messages.
  std::string SlotList() const;

 private:
  std::string optimizer_;    // for messages
  std::string description_;  // the options, for messages
  bool counts_steps_;
  std::vector<BufferSlot> slots_;
};

class StatefulOptimizer : public Optimizer {
 public:
  StatefulOptimizer(OptimizerOptions options, bool counts_steps, std::vector<BufferSlot> slots);

  std::map<std::string, tensor::Tensor> SaveState() const override;
  void LoadState(const std::map<std::string, tensor::Tensor>& state) override;

 protected:
  // Starts an update of variable `name`: takes its state, created on its first update, and
  // advances its step count. Throws InvalidArgument when loaded state does not have the
  // variable's shape.
  StepState BeginStep(const std::string& name, const tensor::Tensor& param);

 private:
  // The state of variable `name`, created on its first update (`*created` tells).
  VariableState& StateFor(const std::string& name, const tensor::Tensor& param, bool* created);

  StateSchema schema_;
  std::map<std::string, VariableState> states_;
};

}  // namespace autodist::optim::detail
