// A small in-memory cluster for the reconcile tests: a job object, the children a controller
// would observe, and Apply(plan) doing what the controller would (creating objects with uids,
// deleting them, writing the status). Time is a fixed clock moved by hand.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "operator/reconcile/model_source.h"
#include "operator/reconcile/reconciler.h"

namespace autodist::reconcile::testing {

inline const std::string kFixtures = AUTODIST_FIXTURES_DIR;
inline const std::string kModelPath = kFixtures + "/models/mlp.onnx";

// 2025-01-01T10:00:00Z plus `seconds`.
TimePoint At(int64_t seconds);

// An AutoDistJob object as the API server returns it: ml/fmnist, uid "job-uid", generation 1,
// the MLP fixture model, 2 workers and 1 parameter server, PSLoadBalancing, 20 steps. `spec`
// entries are merged into the spec (a JSON merge patch: null removes a field).
nlohmann::json JobObject(const nlohmann::json& spec_patch = nlohmann::json::object());

// Options of a test operator: fixed image, cluster addresses.
ReconcilerOptions TestOptions();

// Models from ConfigMaps kept in a map; files come from the real filesystem.
class FakeModels : public ModelSource {
 public:
  std::optional<nlohmann::json> GetConfigMap(const std::string& namespace_name,
                                             const std::string& name) override;
  void AddConfigMap(const std::string& name, nlohmann::json config_map);

  int config_map_reads = 0;

 private:
  std::map<std::string, nlohmann::json> config_maps_;
};

class Cluster {
 public:
  explicit Cluster(nlohmann::json job, ReconcilerOptions options = TestOptions());

  // Reconciles the observed state at `now`; with `apply`, carries the plan out.
  Plan Reconcile(TimePoint now, bool apply = true);
  // Reconciles until a plan changes nothing (at most `rounds` times); returns the last plan.
  Plan Settle(TimePoint now, int rounds = 10);
  void Apply(const Plan& plan);

  // Deleted pods linger with a deletionTimestamp (as with a grace period) until Terminate().
  void set_graceful_deletion(bool graceful) { graceful_deletion_ = graceful; }
  void FinishDeletions();

  // Pod phases, as the kubelet reports them.
  void SetPhase(const std::string& pod, const std::string& phase);
  void SetAllPhases(const std::string& phase);
  // The runtime container terminated with `exit_code` (and `reason`); the pod phase follows.
  // The runtime container of `pod` terminated; `message` is its termination message and
  // `finished_at` when it ended (RFC 3339), both left out when empty.
  void Exit(const std::string& pod, int exit_code, const std::string& reason = "",
            const std::string& message = "", const std::string& finished_at = "");
  void RemovePod(const std::string& pod);  // deleted behind the operator's back
  // The API server refuses to create the objects `refuse` answers for, as the controller hears
  // it: Apply stops at the first refused create and the next Reconcile observes the refusal,
  // until a plan's creates all succeed.
  std::function<std::optional<Rejection>(const nlohmann::json& object)> refuse;
  const std::optional<Rejection>& rejection() const { return rejection_; }

  nlohmann::json& job() { return job_; }
  nlohmann::json& status() { return job_["status"]; }
  std::map<std::string, nlohmann::json>& pods() { return pods_; }
  const nlohmann::json& pod(const std::string& name) const { return pods_.at(name); }
  std::optional<nlohmann::json>& config_map() { return config_map_; }
  std::optional<nlohmann::json>& service() { return service_; }
  std::optional<nlohmann::json>& pod_group() { return pod_group_; }
  std::optional<nlohmann::json>& network_policy() { return network_policy_; }
  std::optional<nlohmann::json>& tls_secret() { return tls_secret_; }
  std::optional<Progress>& progress() { return progress_; }
  FakeModels& models() { return models_; }
  ReconcilerOptions& options() { return options_; }
  bool job_deleted() const { return job_deleted_; }

  // The condition of `type` in the status (an empty object when absent).
  nlohmann::json ConditionOf(const std::string& type) const;
  std::string ConditionStatus(const std::string& type) const;
  std::string ConditionReason(const std::string& type) const;

 private:
  nlohmann::json job_;
  ReconcilerOptions options_;
  FakeModels models_;
  std::map<std::string, nlohmann::json> pods_;
  std::optional<nlohmann::json> config_map_, service_, pod_group_, network_policy_, tls_secret_;
  std::optional<Progress> progress_;
  std::optional<Rejection> rejection_;
  TimePoint now_;  // of the last Reconcile: created pods' creationTimestamp
  bool graceful_deletion_ = false;
  bool job_deleted_ = false;
  int next_uid_ = 0;
};

// Names of the objects of `kind` a plan creates, and of the pods it deletes.
std::vector<std::string> Created(const Plan& plan, const std::string& kind);
std::vector<std::string> Deleted(const Plan& plan, const std::string& kind = "Pod");
// Reasons of the plan's events.
std::vector<std::string> EventReasons(const Plan& plan);

}  // namespace autodist::reconcile::testing
