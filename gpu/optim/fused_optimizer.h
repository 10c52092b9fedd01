// Optimizers on the device: SGD, Adam, AdamW, Adagrad and RMSprop with torch.optim's formulas
// (the CPU optimizers' rules, runtime/optim/rules/, compiled for the GPU), applied to all
// variables of a step at once in a few kernel launches: one per distinct step count, which in a
// training run is one. State lives in device memory and saves to, and loads from, the same
// checkpoint form as the CPU optimizers' ("<variable>/<slot>" tensors), so a run can move
// between backends.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/memory/device_pool.h"
#include "runtime/optim/optimizer_options.h"
#include "runtime/tensor/tensor.h"

namespace autodist::gpu {

// A variable on the device: its value (updated in place) and gradient, float32, row-major.
struct DeviceVariable {
  std::string name;
  tensor::Shape shape;
  float* param = nullptr;
  const float* grad = nullptr;
};

class FusedOptimizer {
 public:
  virtual ~FusedOptimizer() = default;

  // Queues one update of every variable on the optimizer's stream. State is created for a
  // variable on its first update. Throws InvalidArgument naming the variable when its shape
  // differs from its state's, a pointer is null, or a name repeats.
  virtual void Step(const std::vector<DeviceVariable>& variables) = 0;

  // Whether a row-sparse gradient updates only its rows, leaving the others and their state as
  // they are: the rule is row-wise exact (a zero row changes nothing), or lazy_sparse asks for it
  // (optim::OptimizerOptions). Otherwise the caller applies the densified gradient with Step, as
  // the CPU optimizers do.
  virtual bool UpdatesOnlyPresentRows() const = 0;

  // Queues the update of rows rows[0, count) (device memory, unique and ascending) of
  // `variable`, whose `grad` holds those rows' gradients in order ([count, row dims...]): one
  // step of the variable (its step count advances once); the other rows and their state are
  // left alone. The same checks as Step.
  virtual void StepRows(const DeviceVariable& variable, const int64_t* rows, int64_t count) = 0;

  // The learning rate of the next steps (a schedule sets it before each step).
  virtual void set_learning_rate(double lr) = 0;
  virtual double learning_rate() const = 0;

  // Every state tensor keyed "<variable>/<slot>", copied to the host (waits for the stream).
  virtual std::map<std::string, tensor::Tensor> SaveState() const = 0;
  // Replaces all state (copied to the device); throws InvalidArgument, keeping the current state,
  // on what the CPU optimizers' LoadState refuses.
  virtual void LoadState(const std::map<std::string, tensor::Tensor>& state) = 0;
};

// The optimizer named by options.name (validated first: InvalidArgument), on the current GPU,
// with its state in `pool` and its work on `stream`.
std::unique_ptr<FusedOptimizer> MakeFusedOptimizer(const optim::OptimizerOptions& options,
                                                   DevicePool& pool, cudaStream_t stream);

}  // namespace autodist::gpu
