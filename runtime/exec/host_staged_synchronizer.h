// HostStagedSynchronizer: replicas on a GPU under a synchronizer that works in host memory (the
// Gloo collectives and the parameter servers' RPCs of a Strategy). Each replica has a mirror
// session on the CPU that holds its values on the host: gradients are copied to the host before
// they reach the inner synchronizer, and what it writes into the mirrors (new variables, restored
// state) is copied back to the device after each call. The inner synchronizer never sees a
// device tensor, so every Strategy that trains on the CPU trains GPU replicas unchanged, at the
// price of a device-to-host copy of each gradient and a host-to-device copy of each variable
// per step, both from the device kind's host staging memory (pinned for CUDA). A gradient the
// inner synchronizer takes on the device (StepSynchronizer::TakesOnDevice: a push it compresses
// there) is handed over as it is, and only its compressed form crosses.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/exec/session.h"
#include "runtime/exec/step_synchronizer.h"

namespace onnx {
class ModelProto;
}

namespace autodist::exec {

class HostStagedSynchronizer final : public StepSynchronizer {
 public:
  // Mirrors `replicas` sessions of `model` (read from `source`, its loss output `loss`) on the
  // host, for replicas on devices of kind `device`: the mirrors' values and the staged gradients
  // live in its host staging memory (Tensor::HostStaging: pinned for CUDA), so that the copies
  // of every step are the device's DMA. `inner` must outlive this synchronizer.
  HostStagedSynchronizer(StepSynchronizer& inner, const onnx::ModelProto& model,
                         const std::string& source, const std::string& loss, int replicas,
                         tensor::DeviceKind device);
  ~HostStagedSynchronizer() override;

  ResumePoint Start(const std::vector<Session*>& replicas, ResumePoint start,
                    const std::map<std::string, Tensor>& optimizer_state) override;
  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, Gradient>>& gradients,
                   const std::vector<Session*>& replicas) override;
  TrainingState CurrentState(const std::vector<Session*>& replicas) override;
  CheckpointState StateForCheckpoint(const std::vector<Session*>& replicas,
                                     const std::string& checkpoint_path) override;
  // The inner synchronizer's reduction of the replicas' current state, on the first replica's
  // device (evaluation puts it into that replica's session).
  std::map<std::string, Tensor> ReduceStates(const std::string& round,
                                             const std::vector<Session*>& replicas) override;
  bool overlaps_backward() const override { return inner_.overlaps_backward(); }
  void GradientReady(int64_t step, int replica, const std::string& variable,
                     const Gradient& gradient,
                     const std::vector<std::map<std::string, Gradient>>& earlier) override;
  bool is_chief() const override { return inner_.is_chief(); }
  void ReportProgress(int64_t step, int64_t total, double loss,
                      double samples_per_second) override {
    inner_.ReportProgress(step, total, loss, samples_per_second);
  }
  WireTotals Wire() override { return inner_.Wire(); }

  // The host sessions the inner synchronizer works on.
  const std::vector<Session*>& mirrors() const { return mirror_pointers_; }

 private:
  void CheckReplicas(const std::vector<Session*>& replicas) const;
  std::map<std::string, Gradient> MapOnHost(const std::map<std::string, Gradient>& gradients) const;
  // `gradient` of `variable` as the inner synchronizer takes it: on the host, or where it is.
  Gradient Staged(const std::string& variable, const Gradient& gradient) const;
  // Host copies of `step`'s gradients: those GradientReady staged already, the rest copied now.
  std::vector<std::map<std::string, Gradient>> StagedGradients(
      int64_t step, const std::vector<std::map<std::string, Gradient>>& gradients);

  StepSynchronizer& inner_;
  const tensor::DeviceKind device_;  // the replicas' kind, whose staging memory the host copies use
  std::vector<std::unique_ptr<Session>> mirrors_;
  std::vector<Session*> mirror_pointers_;
  // Host copies made during `staged_step_`'s backward pass: the last replica's gradients as they
  // became ready, and the earlier replicas' complete ones.
  int64_t staged_step_ = -1;
  std::map<std::string, Gradient> staged_ready_;
  std::vector<std::map<std::string, Gradient>> staged_earlier_;
};

// `gradient` with its tensors on the host (itself when they are there already), copied into the
// host staging memory of `staging`'s devices (Tensor::HostStaging).
Gradient GradientOnHost(const Gradient& gradient, tensor::DeviceKind staging);

}  // namespace autodist::exec
