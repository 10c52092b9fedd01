// Optimizers: the parameter update of one training step, with torch.optim's (PyTorch 1.13) exact
// float32 formulas and operation order, so that a run here and the same run in PyTorch stay
// within float tolerance of each other. An optimizer owns the per-variable state (momentum
// buffers, moment estimates, step counts), created on a variable's first update.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/optim/optimizer_options.h"
#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::optim {

// One variable's dense update, for ApplyAll.
struct DenseUpdate {
  const std::string* name;
  tensor::Tensor* param;
  const tensor::Tensor* grad;
};

class Optimizer {
 public:
  explicit Optimizer(OptimizerOptions options);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of `param` (float32, updated in place) of variable `name` from its gradient
  // (float32, same shape). Throws InvalidArgument naming the variable on a dtype or shape
  // mismatch, including against state loaded for it.
  virtual void Apply(const std::string& name, tensor::Tensor& param,
                     const tensor::Tensor& grad) = 0;

  // One update of each variable of a step. By default Apply on each in turn; an optimizer on a
  // device fuses them into a few launches (gpu/optim).
  virtual void ApplyAll(const std::vector<DenseUpdate>& updates);

  // One update from a row-sparse gradient (unique ascending row indices + rows). By default the
  // result is exactly Apply's on the densified gradient (PyTorch parity: absent rows are zero
  // rows, on which momentum and moment estimates still decay); optimizers compute it row by row
  // where that is mathematically identical. With lazy_sparse, stateful optimizers update only
  // the rows present.
  virtual void ApplySparse(const std::string& name, tensor::Tensor& param,
                           const tensor::SparseGradient& grad);

  // Whether ApplySparse leaves every row the gradient does not have untouched (bit for bit), so
  // that a parameter server need send back only the rows a step changed. False by default: the
  // densified update moves absent rows too.
  virtual bool SparseUpdatesChangeOnlyPresentRows() const { return false; }

  // The learning rate of the next updates (a schedule sets it before each step). Kept in double,
  // as torch keeps group['lr'].
  void set_learning_rate(double lr);
  double learning_rate() const { return options_.lr; }
  const OptimizerOptions& options() const { return options_; }

  // Every state tensor keyed "<variable>/<slot>" (copies), for checkpoints: step counts are int64
  // scalars, buffers float32 tensors of the variable's shape. Slots per optimizer are listed in
  // docs/training.md.
  virtual std::map<std::string, tensor::Tensor> SaveState() const = 0;
  // Replaces all state with `state` (copied), so that training continues bit-identically.
  // Throws InvalidArgument, leaving the current state unchanged, on a slot this optimizer does
  // not keep, a missing slot, or a wrong dtype or shape.
  virtual void LoadState(const std::map<std::string, tensor::Tensor>& state) = 0;

 protected:
  // Checks shared by every optimizer's Apply / ApplySparse.
  static void CheckDense(const std::string& name, const tensor::Tensor& param,
                         const tensor::Tensor& grad);
  static void CheckSparse(const std::string& name, const tensor::Tensor& param,
                          const tensor::SparseGradient& grad);

  OptimizerOptions options_;
};

// The optimizer named by options.name; validates the options first (InvalidArgument).
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options);

// SparseUpdatesChangeOnlyPresentRows of the optimizer `options` make (validated as above): what
// the cost model needs to know of a parameter server's replies without building one.
bool SparseUpdatesChangeOnlyPresentRows(const OptimizerOptions& options);

// Optimizers of variables on a device other than the CPU come from that device's backend, which
// installs a factory for its kind (the CUDA one: gpu/optim/cuda_optimizer.h), so that this module
// names no device library.
using DeviceOptimizerFactory =
    std::function<std::unique_ptr<Optimizer>(const OptimizerOptions&, const tensor::Device&)>;
void InstallDeviceOptimizers(tensor::DeviceKind kind, DeviceOptimizerFactory factory);

// The optimizer of variables on `device`: MakeOptimizer's on the CPU, the installed factory's
// elsewhere (FailedPrecondition when none is installed).
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options,
                                         const tensor::Device& device);

}  // namespace autodist::optim
