// The executor: runs an ExecutionPlan (execution_plan.h). Forward runs every node in order,
// releasing each value after its last reader; backward runs the planned nodes in reverse from the
// loss, accumulates each variable's gradient (row-sparse where the kernels give it so) and hands
// every gradient out the moment it is final, so that a synchronizer can send it while backward
// goes on.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/exec/execution_plan.h"

namespace autodist::exec {

// The gradient of one variable: dense, or row-sparse when every use is a Gather on axis 0.
struct Gradient {
  Tensor dense;
  std::optional<SparseGradient> sparse;
  bool is_sparse() const { return sparse.has_value(); }
};

using Feeds = std::map<std::string, Tensor>;

// Told each variable's gradient as soon as the backward pass has finished it (before backward
// ends), e.g. to start its all-reduce. The reference stays valid until the step's result is
// destroyed (it points into the map Backward returns).
using GradientReadyFn = std::function<void(const std::string& variable, const Gradient& gradient)>;

// What forward keeps of each backward node for its backward (masks, statistics), by position.
using KernelStates = std::vector<std::unique_ptr<ops::KernelState>>;

class Executor {
 public:
  // `stored` holds the variables, state and constants by value id (the plan's initializers, as
  // training left them); forward reads them and writes replica-local state back in training.
  // `rng` is the graph's random engine (Dropout). All three must outlive the executor.
  Executor(const ExecutionPlan& plan, std::vector<Tensor>& stored, std::mt19937_64& rng);

  // Runs forward; returns every value by id (those released on the way are empty). With
  // `kernel_states` (sized to the plan's nodes) it keeps what backward needs: the states of the
  // backward nodes and the values they read.
  std::vector<Tensor> Forward(const Feeds& feeds, bool training, KernelStates* kernel_states);

  // Runs backward from the loss over the values and states forward kept; returns each trainable
  // variable's gradient that the loss depends on, telling `on_ready` (optional) of each as it
  // becomes final.
  std::map<std::string, Gradient> Backward(std::vector<Tensor>& live, KernelStates& kernel_states,
                                           const GradientReadyFn& on_ready) const;

 private:
  // a + b, gradients of `what`, on the plan's device.
  Tensor Sum(const Tensor& a, const Tensor& b, const std::string& what) const;
  void BindFeeds(const Feeds& feeds, std::vector<Tensor>& live) const;

  const ExecutionPlan& plan_;
  std::vector<Tensor>& stored_;
  std::mt19937_64& rng_;
};

}  // namespace autodist::exec
