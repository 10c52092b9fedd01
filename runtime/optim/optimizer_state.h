// Internal: the per-variable state every stateful optimizer keeps (a step count and named
// float32 buffers the shape of the variable), with checkpoint save/load and its validation.
#pragma once

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

struct VariableState {
  int64_t step = 0;                     // updates taken (slot "step"), when counted
  std::vector<tensor::Tensor> buffers;  // in the order of the optimizer's BufferSlots
  float* buffer(size_t i) { return buffers[i].data<float>(); }
};

class StatefulOptimizer : public Optimizer {
 public:
  StatefulOptimizer(OptimizerOptions options, bool counts_steps, std::vector<BufferSlot> slots);

  std::map<std::string, tensor::Tensor> SaveState() const override;
  void LoadState(const std::map<std::string, tensor::Tensor>& state) override;

 protected:
  // The state of variable `name`, created on its first update (`*created` tells). Throws
  // InvalidArgument when loaded state does not have the variable's shape.
  VariableState& StateFor(const std::string& name, const tensor::Tensor& param, bool* created);

  // Whether this configuration keeps any state (SGD without momentum does not).
  bool stateful() const { return counts_steps_ || !slots_.empty(); }

 private:
  // "step, exp_avg, exp_avg_sq": the slots of this configuration, for messages.
  std::string SlotList() const;

  bool counts_steps_;
  std::vector<BufferSlot> slots_;
  std::map<std::string, VariableState> states_;
};

}  // namespace autodist::optim::detail
