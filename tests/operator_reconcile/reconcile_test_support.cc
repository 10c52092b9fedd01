#include "reconcile_test_support.h"

#include "operator/reconcile/names.h"
#include "operator/reconcile/observed_fields.h"
#include "operator/reconcile/time_format.h"
#include "operator/reconcile/tls_secret.h"

namespace autodist::reconcile::testing {

TimePoint At(int64_t seconds) {
  return *ParseRfc3339("2025-01-01T10:00:00Z") + std::chrono::seconds(seconds);
}

nlohmann::json JobObject(const nlohmann::json& spec_patch) {
  nlohmann::json job = {
      {"apiVersion", "autodist.io/v1alpha1"},
      {"kind", "AutoDistJob"},
      {"metadata",
       {{"name", "fmnist"},
        {"namespace", "ml"},
        {"uid", "job-uid"},
        {"generation", 1},
        {"resourceVersion", "100"},
        {"creationTimestamp", "2025-01-01T09:59:59Z"}}},
      {"spec",
       {{"model", {{"path", kModelPath}}},
        {"data", {{"format", "fashion-mnist"}, {"batchSizePerReplica", 32}}},
        {"training", {{"steps", 20}, {"optimizer", {{"name", "sgd"}, {"lr", 0.1}}}}},
        {"strategy", {{"builder", "PSLoadBalancing"}}},
        {"resources", {{"workers", 2}, {"parameterServers", 1}}}}},
  };
  job["spec"].merge_patch(spec_patch);
  return job;
}

ReconcilerOptions TestOptions() {
  ReconcilerOptions options;
  options.runtime_image = "registry.test/autodist-runtime:1.0";
  return options;
}

std::optional<nlohmann::json> FakeModels::GetConfigMap(const std::string& namespace_name,
                                                       const std::string& name) {
  ++config_map_reads;
  const auto found = config_maps_.find(namespace_name + "/" + name);
  if (found == config_maps_.end()) return std::nullopt;
  return found->second;
}

void FakeModels::AddConfigMap(const std::string& name, nlohmann::json config_map) {
  config_maps_[name] = std::move(config_map);
}

Cluster::Cluster(nlohmann::json job, ReconcilerOptions options)
    : job_(std::move(job)), options_(std::move(options)) {}

Plan Cluster::Reconcile(TimePoint now, bool apply) {
  Observed observed;
  observed.job = job_;
  // Children as the operator's informers cache them (observed_fields.h), so every scenario here
  // also shows that the reconciler reads nothing the caches drop.
  for (const auto& [name, pod] : pods_) observed.pods.push_back(SlimPod(pod));
  if (config_map_.has_value()) observed.config_map = SlimToMetadata(*config_map_);
  if (service_.has_value()) observed.service = SlimToMetadata(*service_);
  observed.pod_group = pod_group_;
  if (network_policy_.has_value()) observed.network_policy = SlimToMetadata(*network_policy_);
  if (tls_secret_.has_value()) observed.tls_secret = SlimTlsSecret(*tls_secret_);
  observed.progress = progress_;
  observed.rejection = rejection_;
  observed.now = now;
  now_ = now;
  Plan plan = reconcile::Reconcile(observed, options_, models_);
  if (apply) Apply(plan);
  return plan;
}

Plan Cluster::Settle(TimePoint now, int rounds) {
  Plan plan;
  for (int i = 0; i < rounds; ++i) {
    plan = Reconcile(now);
    if (!plan.HasActions()) return plan;
  }
  ADD_FAILURE() << "the reconcile did not settle in " << rounds << " rounds";
  return plan;
}

void Cluster::Apply(const Plan& plan) {
  if (plan.status.has_value()) job_["status"] = *plan.status;
  for (const ObjectRef& ref : plan.deletes) {
    if (ref.kind == "Pod") {
      auto found = pods_.find(ref.name);
      ASSERT_NE(found, pods_.end()) << "deleting a pod that does not exist: " << ref.name;
      ASSERT_EQ(found->second["metadata"]["uid"], ref.uid) << ref.name;
      if (graceful_deletion_) {
        found->second["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z";
      } else {
        pods_.erase(found);
      }
    } else if (ref.kind == "PodGroup") {
      pod_group_.reset();
    } else if (ref.kind == "Secret") {
      ASSERT_TRUE(tls_secret_.has_value()) << "deleting a Secret that does not exist";
      ASSERT_EQ((*tls_secret_)["metadata"]["uid"], ref.uid);
      tls_secret_.reset();
    } else {
      ADD_FAILURE() << "unexpected delete of a " << ref.kind;
    }
  }
  if (!plan.creates.empty()) rejection_.reset();
  for (nlohmann::json object : plan.creates) {
    const std::string kind = object["kind"];
    const std::string name = object["metadata"]["name"];
    if (refuse) {
      rejection_ = refuse(object);
      if (rejection_.has_value()) break;
    }
    object["metadata"]["uid"] = "uid-" + std::to_string(++next_uid_);
    if (kind == "Pod") {
      ASSERT_EQ(pods_.count(name), 0U) << "creating pod " << name << " twice";
      object["metadata"]["creationTimestamp"] = FormatRfc3339(now_);
      object["status"] = {{"phase", "Pending"}};
      pods_[name] = std::move(object);
    } else if (kind == "ConfigMap") {
      ASSERT_FALSE(config_map_.has_value()) << "creating the ConfigMap twice";
      config_map_ = std::move(object);
    } else if (kind == "Service") {
      ASSERT_FALSE(service_.has_value()) << "creating the Service twice";
      service_ = std::move(object);
    } else if (kind == "PodGroup") {
      ASSERT_FALSE(pod_group_.has_value()) << "creating the PodGroup twice";
      pod_group_ = std::move(object);
    } else if (kind == "NetworkPolicy") {
      ASSERT_FALSE(network_policy_.has_value()) << "creating the NetworkPolicy twice";
      network_policy_ = std::move(object);
    } else if (kind == "Secret") {
      ASSERT_FALSE(tls_secret_.has_value()) << "creating the TLS Secret twice";
      tls_secret_ = std::move(object);
    } else {
      ADD_FAILURE() << "unexpected create of a " << kind;
    }
  }
  if (plan.delete_job) job_deleted_ = true;
}

void Cluster::FinishDeletions() {
  std::erase_if(pods_, [](const auto& entry) {
    return entry.second["metadata"].contains("deletionTimestamp");
  });
}

void Cluster::SetPhase(const std::string& pod, const std::string& phase) {
  nlohmann::json& status = pods_.at(pod)["status"];
  status["phase"] = phase;
  // Past Pending, a scheduler bound it to a node.
  if (phase != "Pending") pods_.at(pod)["spec"]["nodeName"] = "node-1";
  if (phase == "Running") {
    status["containerStatuses"] = nlohmann::json::array(
        {{{"name", kRuntimeContainer}, {"state", {{"running", {{"startedAt", "x"}}}}}}});
  }
}

void Cluster::SetAllPhases(const std::string& phase) {
  for (auto& [name, pod] : pods_) SetPhase(name, phase);
}

void Cluster::Exit(const std::string& pod, int exit_code, const std::string& reason,
                   const std::string& message, const std::string& finished_at) {
  nlohmann::json& status = pods_.at(pod)["status"];
  status["phase"] = exit_code == 0 ? "Succeeded" : "Failed";
  nlohmann::json terminated = {{"exitCode", exit_code}};
  if (!reason.empty()) terminated["reason"] = reason;
  if (!message.empty()) terminated["message"] = message;
  if (!finished_at.empty()) terminated["finishedAt"] = finished_at;
  status["containerStatuses"] = nlohmann::json::array(
      {{{"name", kRuntimeContainer}, {"state", {{"terminated", terminated}}}}});
}

void Cluster::RemovePod(const std::string& pod) { pods_.erase(pod); }

nlohmann::json Cluster::ConditionOf(const std::string& type) const {
  if (!job_.contains("status")) return nlohmann::json::object();
  for (const nlohmann::json& condition :
       job_.at("status").value("conditions", nlohmann::json::array())) {
    if (condition["type"] == type) return condition;
  }
  return nlohmann::json::object();
}

std::string Cluster::ConditionStatus(const std::string& type) const {
  return ConditionOf(type).value("status", "");
}

std::string Cluster::ConditionReason(const std::string& type) const {
  return ConditionOf(type).value("reason", "");
}

std::vector<std::string> Created(const Plan& plan, const std::string& kind) {
  std::vector<std::string> names;
  for (const nlohmann::json& object : plan.creates) {
    if (object["kind"] == kind) names.push_back(object["metadata"]["name"]);
  }
  return names;
}

std::vector<std::string> Deleted(const Plan& plan, const std::string& kind) {
  std::vector<std::string> names;
  for (const ObjectRef& ref : plan.deletes) {
    if (ref.kind == kind) names.push_back(ref.name);
  }
  return names;
}

std::vector<std::string> EventReasons(const Plan& plan) {
  std::vector<std::string> reasons;
  for (const Event& event : plan.events) reasons.push_back(event.reason);
  return reasons;
}

}  // namespace autodist::reconcile::testing
