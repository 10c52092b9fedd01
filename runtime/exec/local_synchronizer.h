// LocalSynchronizer: the optimizer applied in this process. With one replica this is exactly the
// single-process step (ApplyGradients); with several in-process replicas their gradients are
// averaged first (summed in replica order, then divided), as a synchronous data-parallel step of
// the same global batch would.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "runtime/exec/step_synchronizer.h"
#include "runtime/optim/optimizer.h"

namespace autodist::exec {

class LocalSynchronizer : public StepSynchronizer {
 public:
  // The variables' `device` decides the optimizer (optim::MakeOptimizer).
  LocalSynchronizer(const optim::OptimizerOptions& optimizer, std::set<std::string> sum_states,
                    const tensor::Device& device = tensor::Device::Cpu());

  ResumePoint Start(const std::vector<Session*>& replicas, ResumePoint start,
                    const std::map<std::string, tensor::Tensor>& optimizer_state) override;
  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, Gradient>>& gradients,
                   const std::vector<Session*>& replicas) override;
  TrainingState CurrentState(const std::vector<Session*>& replicas) override;
  std::map<std::string, tensor::Tensor> ReduceStates(
      const std::string& round, const std::vector<Session*>& replicas) override;
  // With the host's optimizer, replicas on a GPU train through host staging (a process's several
  // GPU replicas: their mean and update on the host).
  bool works_on_host() const override { return host_; }

 private:
  bool host_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::set<std::string> sum_states_;
};

// The mean of several replicas' gradients of one variable: dense tensors summed in order then
// divided; sparse ones merged (rows summed) then divided.
Gradient MeanGradient(const std::vector<const Gradient*>& gradients);

}  // namespace autodist::exec
