#include "runtime/exec/local_synchronizer.h"

#include "runtime/common/error.h"
#include "runtime/exec/trainer.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::exec {
namespace {

void Scale(Tensor& t, float factor) {
  float* data = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] *= factor;
}

// Copies replica 0's variables into every other replica.
void Broadcast(const std::vector<Session*>& replicas) {
  for (size_t r = 1; r < replicas.size(); ++r) {
    for (const std::string& name : replicas[0]->trainable_names()) {
      replicas[r]->variable(name) = replicas[0]->variable(name).Clone();
    }
  }
}

}  // namespace

Gradient MeanGradient(const std::vector<const Gradient*>& gradients) {
  AD_CHECK(!gradients.empty(), kInternal, "no gradients to average");
  const float inverse = 1.0F / static_cast<float>(gradients.size());
  Gradient mean;
  if (gradients[0]->is_sparse()) {
    std::vector<const tensor::SparseGradient*> parts;
    for (const Gradient* g : gradients) parts.push_back(&*g->sparse);
    mean.sparse = tensor::MergeSparse(parts);
    if (gradients.size() > 1) Scale(mean.sparse->values, inverse);
    return mean;
  }
  mean.dense = gradients[0]->dense.Clone();
  if (gradients.size() == 1) return mean;
  float* sum = mean.dense.data<float>();
  for (size_t r = 1; r < gradients.size(); ++r) {
    const float* add = gradients[r]->dense.data<float>();
    for (int64_t i = 0; i < mean.dense.numel(); ++i) sum[i] += add[i];
  }
  Scale(mean.dense, inverse);
  return mean;
}

std::map<std::string, Tensor> ReduceLocalStates(const std::vector<Session*>& replicas,
                                                const std::set<std::string>& sum_states) {
  std::map<std::string, Tensor> reduced;
  if (replicas.empty()) return reduced;
  for (const std::string& name : replicas[0]->state_names()) {
    if (replicas.size() == 1) {  // nothing to reduce (and the state may be on a GPU)
      reduced.emplace(name, replicas[0]->state(name).Clone());
      continue;
    }
    Tensor total = replicas[0]->state(name).Clone();
    float* sum = total.data<float>();
    for (size_t r = 1; r < replicas.size(); ++r) {
      const float* add = replicas[r]->state(name).data<float>();
      for (int64_t i = 0; i < total.numel(); ++i) sum[i] += add[i];
    }
    if (!sum_states.contains(name)) {
      Scale(total, 1.0F / static_cast<float>(replicas.size()));
    }
    reduced.emplace(name, std::move(total));
  }
  return reduced;
}

LocalSynchronizer::LocalSynchronizer(const optim::OptimizerOptions& optimizer,
                                     std::set<std::string> sum_states, const tensor::Device& device)
    : host_(device.is_cpu()),
      optimizer_(optim::MakeOptimizer(optimizer, device)),
      sum_states_(std::move(sum_states)) {}

ResumePoint LocalSynchronizer::Start(const std::vector<Session*>& replicas, ResumePoint start,
                                     const std::map<std::string, Tensor>& optimizer_state) {
  if (!optimizer_state.empty()) optimizer_->LoadState(optimizer_state);
  Broadcast(replicas);
  return start;
}

void LocalSynchronizer::Synchronize(int64_t /*step*/, double lr,
                                    const std::vector<std::map<std::string, Gradient>>& gradients,
                                    const std::vector<Session*>& replicas) {
  optimizer_->set_learning_rate(lr);
  if (replicas.size() == 1) {
    ApplyGradients(gradients[0], *replicas[0], *optimizer_);
    return;
  }
  std::map<std::string, Gradient> mean;
  for (const auto& [name, unused] : gradients[0]) {
    std::vector<const Gradient*> parts;
    for (const auto& replica : gradients) parts.push_back(&replica.at(name));
    mean.emplace(name, MeanGradient(parts));
  }
  ApplyGradients(mean, *replicas[0], *optimizer_);
  Broadcast(replicas);
}

TrainingState LocalSynchronizer::CurrentState(const std::vector<Session*>& replicas) {
  TrainingState state;
  // Checkpoints and exports read the values on the host.
  for (const std::string& name : replicas[0]->trainable_names()) {
    state.variables.emplace(name, replicas[0]->variable(name).To(tensor::Device::Cpu()));
  }
  state.optimizer = optimizer_->SaveState();
  return state;
}

std::map<std::string, Tensor> LocalSynchronizer::ReduceStates(
    const std::string& /*round*/, const std::vector<Session*>& replicas) {
  return ReduceLocalStates(replicas, sum_states_);
}

}  // namespace autodist::exec
