#include "runtime/exec/host_staged_synchronizer.h"

#include <onnx/onnx_pb.h>

#include "runtime/common/error.h"
#include "runtime/observe/timeline.h"

namespace autodist::exec {
namespace {

// What training changes in a replica: its variables, and with `states` its replica-local state,
// copied from one session into the other's storage.
void CopyValues(Session& from, Session& to, bool states) {
  for (const std::string& name : from.trainable_names()) {
    to.variable(name).CopyFrom(from.variable(name));
  }
  if (!states) return;
  for (const std::string& name : from.state_names()) to.state(name).CopyFrom(from.state(name));
}

// A copy of `tensor` in the host staging memory of `staging`'s devices (pinned for CUDA).
Tensor StagedCopy(const Tensor& tensor, tensor::DeviceKind staging) {
  Tensor out = Tensor::HostStaging(tensor.dtype(), tensor.shape(), staging);
  out.CopyFrom(tensor);
  return out;
}

// `tensor` on the host: itself when it is there already, else a staged copy.
Tensor OnHost(const Tensor& tensor, tensor::DeviceKind staging) {
  return tensor.device().is_cpu() ? tensor : StagedCopy(tensor, staging);
}

}  // namespace

Gradient GradientOnHost(const Gradient& gradient, tensor::DeviceKind staging) {
  Gradient out;
  if (gradient.is_sparse()) {
    out.sparse = tensor::SparseGradient{OnHost(gradient.sparse->indices, staging),
                                        OnHost(gradient.sparse->values, staging),
                                        gradient.sparse->dense_shape};
  } else {
    out.dense = OnHost(gradient.dense, staging);
  }
  return out;
}

HostStagedSynchronizer::HostStagedSynchronizer(StepSynchronizer& inner,
                                               const onnx::ModelProto& model,
                                               const std::string& source, const std::string& loss,
                                               int replicas, tensor::DeviceKind device)
    : inner_(inner), device_(device) {
  AD_CHECK(replicas >= 1, kInternal, "host staging for {} replicas", replicas);
  for (int r = 0; r < replicas; ++r) {
    SessionOptions options;
    options.loss = loss;
    mirrors_.push_back(std::make_unique<Session>(model, source, options));
    mirror_pointers_.push_back(mirrors_.back().get());
    // The mirrors' values cross to and from the devices every step: from staging memory the
    // copies are the device's own DMA. A value the inner synchronizer replaces (a parameter
    // server's reply) is copied from wherever it landed.
    if (device == tensor::DeviceKind::kCpu) continue;
    Session& mirror = *mirrors_.back();
    for (const std::string& name : mirror.trainable_names()) {
      mirror.variable(name) = StagedCopy(mirror.variable(name), device);
    }
    for (const std::string& name : mirror.state_names()) {
      mirror.state(name) = StagedCopy(mirror.state(name), device);
    }
  }
}

Gradient HostStagedSynchronizer::Staged(const std::string& variable,
                                        const Gradient& gradient) const {
  return inner_.TakesOnDevice(variable) ? gradient : GradientOnHost(gradient, device_);
}

std::map<std::string, Gradient> HostStagedSynchronizer::MapOnHost(
    const std::map<std::string, Gradient>& gradients) const {
  std::map<std::string, Gradient> out;
  for (const auto& [name, gradient] : gradients) out.emplace(name, Staged(name, gradient));
  return out;
}

HostStagedSynchronizer::~HostStagedSynchronizer() = default;

void HostStagedSynchronizer::CheckReplicas(const std::vector<Session*>& replicas) const {
  AD_CHECK(replicas.size() == mirrors_.size(), kInternal,
           "host staging mirrors {} replicas, the step has {}", mirrors_.size(), replicas.size());
}

ResumePoint HostStagedSynchronizer::Start(const std::vector<Session*>& replicas, ResumePoint start,
                                          const std::map<std::string, Tensor>& optimizer_state) {
  CheckReplicas(replicas);
  // The replicas' initial (or restored) values reach the inner synchronizer through the
  // mirrors; what it publishes or receives goes back to the devices.
  for (size_t r = 0; r < replicas.size(); ++r) CopyValues(*replicas[r], *mirrors_[r], true);
  const ResumePoint point = inner_.Start(mirror_pointers_, start, optimizer_state);
  for (size_t r = 0; r < replicas.size(); ++r) CopyValues(*mirrors_[r], *replicas[r], true);
  return point;
}

void HostStagedSynchronizer::GradientReady(
    int64_t step, int replica, const std::string& variable, const Gradient& gradient,
    const std::vector<std::map<std::string, Gradient>>& earlier) {
  if (staged_step_ != step) {
    staged_step_ = step;
    staged_ready_.clear();
    staged_earlier_.clear();
    for (int r = 0; r < replica; ++r) staged_earlier_.push_back(MapOnHost(earlier[r]));
  }
  const Gradient& staged =
      staged_ready_.insert_or_assign(variable, Staged(variable, gradient)).first->second;
  inner_.GradientReady(step, replica, variable, staged, staged_earlier_);
}

std::vector<std::map<std::string, Gradient>> HostStagedSynchronizer::StagedGradients(
    int64_t step, const std::vector<std::map<std::string, Gradient>>& gradients) {
  const observe::Span span("sync", "stage gradients to the host");
  std::vector<std::map<std::string, Gradient>> host(gradients.size());
  const bool staged = staged_step_ == step;
  for (size_t r = 0; r < gradients.size(); ++r) {
    const bool last = r + 1 == gradients.size();
    if (staged && !last && r < staged_earlier_.size()) {
      host[r] = std::move(staged_earlier_[r]);
      continue;
    }
    for (const auto& [name, gradient] : gradients[r]) {
      auto ready = staged && last ? staged_ready_.find(name) : staged_ready_.end();
      if (ready != staged_ready_.end()) {
        host[r].emplace(name, std::move(ready->second));
      } else {
        host[r].emplace(name, Staged(name, gradient));
      }
    }
  }
  staged_step_ = -1;
  staged_ready_.clear();
  staged_earlier_.clear();
  return host;
}

void HostStagedSynchronizer::Synchronize(
    int64_t step, double lr, const std::vector<std::map<std::string, Gradient>>& gradients,
    const std::vector<Session*>& replicas) {
  CheckReplicas(replicas);
  inner_.Synchronize(step, lr, StagedGradients(step, gradients), mirror_pointers_);
  const observe::Span span("sync", "stage variables to the device");
  for (size_t r = 0; r < replicas.size(); ++r) CopyValues(*mirrors_[r], *replicas[r], false);
}

TrainingState HostStagedSynchronizer::CurrentState(const std::vector<Session*>& replicas) {
  CheckReplicas(replicas);
  return inner_.CurrentState(mirror_pointers_);
}

CheckpointState HostStagedSynchronizer::StateForCheckpoint(const std::vector<Session*>& replicas,
                                                           const std::string& checkpoint_path) {
  CheckReplicas(replicas);
  return inner_.StateForCheckpoint(mirror_pointers_, checkpoint_path);
}

std::map<std::string, Tensor> HostStagedSynchronizer::ReduceStates(
    const std::string& round, const std::vector<Session*>& replicas) {
  CheckReplicas(replicas);
  // Forward passes changed the state on the devices since it was last staged.
  for (size_t r = 0; r < replicas.size(); ++r) {
    for (const std::string& name : replicas[r]->state_names()) {
      mirrors_[r]->state(name).CopyFrom(replicas[r]->state(name));
    }
  }
  std::map<std::string, Tensor> reduced = inner_.ReduceStates(round, mirror_pointers_);
  for (auto& [name, value] : reduced) value = value.To(replicas[0]->state(name).device());
  return reduced;
}

}  // namespace autodist::exec
