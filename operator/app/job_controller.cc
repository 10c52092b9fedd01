#include "operator/app/job_controller.h"

#include <map>
#include <optional>

#include "operator/app/log.h"
#include "operator/controller/label_selector.h"
#include "operator/kube/api_error.h"
#include "operator/kube/resource.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/job_status.h"
#include "operator/reconcile/model_source.h"
#include "operator/reconcile/names.h"
#include "operator/reconcile/observed_fields.h"
#include "operator/reconcile/pod_group.h"
#include "operator/reconcile/reconciler.h"
#include "operator/reconcile/tls_secret.h"
#include "runtime/common/error.h"

namespace autodist::app {
namespace {

using controller::Informer;
using controller::InformerOptions;
using controller::ObjectPtr;

// Children are found by this label; the operator watches nothing else of these kinds.
const std::string kManagedSelector =
    std::string(reconcile::kManagedByLabel) + "=" + reconcile::kManagedByValue;

// The model's ConfigMap is read on demand (rarely: once per compile), not through an informer,
// which would cache every ConfigMap of the watched namespaces.
class ApiModelSource final : public reconcile::ModelSource {
 public:
  explicit ApiModelSource(kube::Client& client) : client_(client) {}
  std::optional<nlohmann::json> GetConfigMap(const std::string& ns,
                                             const std::string& name) override {
    try {
      return client_.Get(kube::resources::kConfigMaps, ns, name);
    } catch (const std::exception& e) {
      if (kube::IsNotFound(e)) return std::nullopt;
      throw;
    }
  }

 private:
  kube::Client& client_;
};

}  // namespace

struct JobController::Scope {
  std::string ns;  // "" = every namespace
  std::unique_ptr<Informer> jobs;
  std::unique_ptr<Informer> pods;
  std::unique_ptr<Informer> config_maps;
  std::unique_ptr<Informer> services;
  std::unique_ptr<Informer> network_policies;  // only with --network-policy
  std::unique_ptr<Informer> tls_secrets;       // only with --job-tls

  std::vector<Informer*> all() const {
    std::vector<Informer*> informers{jobs.get(), pods.get(), config_maps.get(), services.get()};
    if (network_policies) informers.push_back(network_policies.get());
    if (tls_secrets) informers.push_back(tls_secrets.get());
    return informers;
  }
};

JobController::JobController(kube::Client& client, OperatorOptions options,
                             controller::OperatorMetrics& metrics)
    : client_(client),
      options_(std::move(options)),
      metrics_(metrics),
      executor_(client),
      own_writes_([this](const std::string& key) { controller_->queue().Add(key); }),
      progress_poller_(
          [this](const std::string& coordinator, std::chrono::milliseconds timeout) {
            return progress_.Read(coordinator, timeout);
          },
          [this](const std::string& key) { controller_->queue().Add(key); },
          ProgressPollerOptions{options_.progress_interval, std::chrono::seconds(1), 4}) {
  controller::ControllerOptions controller_options;
  controller_options.name = "autodistjob";
  controller_options.workers = options_.workers;
  controller_options.metrics = metrics_.ForController();
  controller_ = std::make_unique<controller::Controller>(
      controller_options, [this](const std::string& key) { return Reconcile(key); });
  std::vector<std::string> namespaces = options_.namespaces;
  if (namespaces.empty()) namespaces.emplace_back();
  for (const std::string& ns : namespaces) {
    auto scope = std::make_unique<Scope>();
    scope->ns = ns;
    InformerOptions jobs;
    jobs.ns = ns;
    InformerOptions children = jobs;
    children.label_selector = kManagedSelector;
    // The children's caches keep only what Reconcile reads (observed_fields.h): full pods made
    // the caches most of the operator's memory (docs/performance.md, "Operator at scale").
    // Children are only ever created and deleted, never updated from the cache. Jobs keep all
    // the reconciler reads; their status writes carry only metadata and status (plan_executor).
    jobs.transform = reconcile::SlimJob;
    InformerOptions pods = children;
    pods.transform = reconcile::SlimPod;
    InformerOptions config_maps = children;
    config_maps.transform = reconcile::SlimToMetadata;
    InformerOptions services = children;
    services.transform = reconcile::SlimToMetadata;
    scope->jobs = std::make_unique<Informer>(client_, kube::resources::kAutoDistJobs, jobs);
    scope->pods = std::make_unique<Informer>(client_, kube::resources::kPods, pods);
    scope->config_maps =
        std::make_unique<Informer>(client_, kube::resources::kConfigMaps, config_maps);
    scope->services = std::make_unique<Informer>(client_, kube::resources::kServices, services);
    if (options_.reconciler.network_policy.enabled) {
      InformerOptions policies = children;
      policies.transform = reconcile::SlimToMetadata;
      scope->network_policies =
          std::make_unique<Informer>(client_, kube::resources::kNetworkPolicies, policies);
    }
    if (options_.reconciler.tls.enabled) {
      InformerOptions secrets = children;
      secrets.transform = reconcile::SlimTlsSecret;
      scope->tls_secrets = std::make_unique<Informer>(client_, kube::resources::kSecrets, secrets);
    }
    scope->jobs->AddHandler(EnqueueJob());
    for (Informer* informer : scope->all()) {
      if (informer == scope->jobs.get()) continue;
      informer->AddHandler(
          controller_->EnqueueOwner(reconcile::kJobKind, options_.child_event_batch));
    }
    scopes_.push_back(std::move(scope));
  }
}

JobController::~JobController() { Stop(); }

controller::EventHandler JobController::EnqueueJob() {
  controller::EventHandler enqueue = controller_->EnqueueObject();
  return {enqueue.on_add,
          [this, on_update = enqueue.on_update](const nlohmann::json& old_object,
                                                const nlohmann::json& object) {
            if (own_writes_.ShouldEnqueue(controller::ObjectKey(object), object)) {
              on_update(old_object, object);
            }
          },
          [this, on_delete = enqueue.on_delete](const nlohmann::json& object) {
            own_writes_.Forget(controller::ObjectKey(object));
            if (const auto coordinator = progress_poller_.Forget(controller::ObjectKey(object))) {
              progress_.Forget(*coordinator);
            }
            NoteCreates(controller::ObjectKey(object), "", true, std::nullopt);
            on_delete(object);
          }};
}

void JobController::Start() {
  if (started_.exchange(true)) return;
  for (const auto& scope : scopes_) {
    for (Informer* informer : scope->all()) informer->Start();
  }
  for (const auto& scope : scopes_) {
    for (Informer* informer : scope->all()) {
      while (!informer->WaitForSync(std::chrono::seconds(1))) {
        if (!started_) return;
        Log(spdlog::level::info, "waiting for the cache to sync",
            {{"resource", informer->resource().plural}, {"namespace", scope->ns}});
      }
    }
  }
  Log(spdlog::level::info, "caches synced; starting workers", {{"workers", options_.workers}});
  controller_->Start();
  gauge_thread_ = std::jthread([this](const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      UpdateStateGauge();
      std::mutex mutex;
      std::unique_lock lock(mutex);
      std::condition_variable_any().wait_for(lock, stop, std::chrono::seconds(2),
                                             [] { return false; });
    }
  });
}

void JobController::Stop() {
  started_ = false;
  if (gauge_thread_.joinable()) {
    gauge_thread_.request_stop();
    gauge_thread_.join();
  }
  controller_->Stop();
  for (const auto& scope : scopes_) {
    for (Informer* informer : scope->all()) informer->Stop();
  }
}

bool JobController::Synced() const {
  for (const auto& scope : scopes_) {
    for (Informer* informer : scope->all()) {
      if (!informer->HasSynced()) return false;
    }
  }
  return true;
}

JobController::Scope& JobController::ScopeOf(const std::string& ns) const {
  for (const auto& scope : scopes_) {
    if (scope->ns.empty() || scope->ns == ns) return *scope;
  }
  Fail(ErrorCode::kInternal, "namespace '{}' is not watched by this operator", ns);
}

void JobController::UpdateStateGauge() {
  std::map<std::string, int> states;
  for (const auto& scope : scopes_) {
    for (const ObjectPtr& job : scope->jobs->cache().List()) {
      const reconcile::JobStatus status =
          reconcile::JobStatus::FromJson(job->value("status", nlohmann::json::object()));
      ++states[status.state.empty() ? "Pending" : status.state];
    }
  }
  for (const char* state :
       {"Pending", "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"}) {
    states.try_emplace(state, 0);
  }
  for (const auto& [state, count] : states) metrics_.jobs.With({state}).Set(count);
}

std::optional<reconcile::Rejection> JobController::RejectionOf(const std::string& key,
                                                               const std::string& uid) {
  const std::lock_guard lock(rejections_mutex_);
  const auto found = rejections_.find(key);
  if (found == rejections_.end() || found->second.first != uid) return std::nullopt;
  return found->second.second;
}

void JobController::NoteCreates(const std::string& key, const std::string& uid, bool attempted,
                                const std::optional<reconcile::Rejection>& rejection) {
  const std::lock_guard lock(rejections_mutex_);
  if (rejection.has_value()) {
    rejections_[key] = {uid, *rejection};
  } else if (attempted) {
    rejections_.erase(key);
  }
}

controller::Result JobController::Reconcile(const std::string& key) {
  const auto [ns, name] = controller::SplitKey(key);
  const Scope& scope = ScopeOf(ns);
  const OwnStatusWrites::CachedJob cached = own_writes_.Read(key, scope.jobs->cache());
  const ObjectPtr& job = cached.job;
  if (!job) return {};  // deleted: the garbage collector removes its children
  // The cache has not yet seen this operator's last status write: a plan from the older status
  // would be stale (and its status write a 409). The write's event queues the job again.
  if (cached.behind_own_write) return {};
  const std::string reconcile_id = std::to_string(++reconcile_ids_);
  const nlohmann::json log_fields = {{"job", key}, {"reconcileID", reconcile_id}};

  reconcile::Observed observed;
  observed.job = *job;
  // The job's pods through the cache's ownerReference index, not a scan of every pod: with
  // thousands of jobs a label-selector List per reconcile made reconciling quadratic
  // (docs/performance.md, "Operator at scale"). The reconciler only ever considers pods the job
  // controls, and the contract is "labelled with the job's name", so both are required here.
  const std::string uid = job->at("metadata").value("uid", "");
  const auto selector = controller::LabelSelector::FromLabels({{reconcile::kJobNameLabel, name}});
  for (const ObjectPtr& pod : scope.pods->cache().ListByOwner(uid)) {
    const nlohmann::json& metadata = pod->at("metadata");
    if (metadata.value("namespace", "") == ns &&
        selector.Matches(metadata.value("labels", nlohmann::json()))) {
      observed.pods.push_back(*pod);
    }
  }
  if (const ObjectPtr cm = scope.config_maps->cache().Get(ns, reconcile::ConfigMapName(name))) {
    observed.config_map = *cm;
  }
  if (const ObjectPtr service = scope.services->cache().Get(ns, reconcile::ServiceName(name))) {
    observed.service = *service;
  }
  if (scope.network_policies) {
    if (const ObjectPtr policy =
            scope.network_policies->cache().Get(ns, reconcile::NetworkPolicyName(name))) {
      observed.network_policy = *policy;
    }
  }
  if (scope.tls_secrets) {
    if (const ObjectPtr secret =
            scope.tls_secrets->cache().Get(ns, reconcile::TlsSecretName(name))) {
      observed.tls_secret = *secret;
    }
  }
  if (options_.reconciler.gang_scheduler != reconcile::GangScheduler::kNone) {
    try {
      const kube::Resource pod_groups = ResourceOfApiVersion(
          reconcile::PodGroupApiVersion(options_.reconciler.gang_scheduler), "PodGroup");
      observed.pod_group = client_.Get(pod_groups, ns, reconcile::PodGroupName(name));
    } catch (const std::exception& e) {
      if (!kube::IsNotFound(e)) throw;
    }
  }
  // Polled off this worker (progress_poller.h) at the coordinator the last plan named.
  observed.progress = progress_poller_.Latest(key);
  observed.now = std::chrono::system_clock::now();
  observed.rejection = RejectionOf(key, uid);

  ApiModelSource models(client_);
  const reconcile::Plan plan = reconcile::Reconcile(observed, options_.reconciler, models);
  std::optional<OwnStatusWrites::Write> status_write;
  if (plan.status.has_value()) {
    status_write.emplace(own_writes_, key, job->at("metadata").value("resourceVersion", ""));
  }
  const ExecuteResult executed = executor_.Execute(*job, plan);
  if (status_write.has_value()) status_write->Done(executed.status_resource_version);
  if (executed.outcome == ExecuteOutcome::kConflict) {
    Log(spdlog::level::debug, "status conflict; reconciling again", log_fields);
    return {.requeue = true};
  }
  NoteCreates(key, uid, !plan.creates.empty(), executed.rejection);
  // A change of progress queues the job again. A new gang's coordinator replaces the old one's
  // (and what was read there).
  if (plan.coordinator.has_value()) {
    progress_.UseCredentials(*plan.coordinator, plan.coordinator_credentials);
    if (const auto replaced = progress_poller_.Track(key, *plan.coordinator);
        replaced.has_value() && *replaced != *plan.coordinator) {
      progress_.Forget(*replaced);
    }
  }

  const reconcile::JobStatus before =
      reconcile::JobStatus::FromJson(job->value("status", nlohmann::json::object()));
  if (plan.status.has_value()) {
    const reconcile::JobStatus after = reconcile::JobStatus::FromJson(*plan.status);
    if (!before.Find(reconcile::kCreated) && after.Find(reconcile::kCreated)) {
      metrics_.jobs_created.With({ns}).Inc();
    }
    if (!before.IsTrue(reconcile::kSucceeded) && after.IsTrue(reconcile::kSucceeded)) {
      metrics_.jobs_successful.With({ns}).Inc();
    }
    if (!before.IsTrue(reconcile::kFailed) && after.IsTrue(reconcile::kFailed)) {
      metrics_.jobs_failed.With({ns}).Inc();
    }
    if (after.restart_count > before.restart_count) {
      metrics_.jobs_restarted.With({ns}).Inc(after.restart_count - before.restart_count);
    }
    if (after.state != before.state) {
      nlohmann::json fields = log_fields;
      fields["from"] = before.state;
      fields["to"] = after.state;
      Log(spdlog::level::info, "job state changed", fields);
    }
    if (after.Finished()) {
      if (const std::optional<std::string> coordinator = progress_poller_.Forget(key)) {
        progress_.Forget(*coordinator);
      }
    }
  }
  for (const reconcile::Event& event : plan.events) {
    nlohmann::json fields = log_fields;
    fields["reason"] = event.reason;
    Log(event.type == reconcile::kEventWarning ? spdlog::level::warn : spdlog::level::info,
        event.message, fields);
  }

  if (executed.rejection.has_value()) {
    // The next reconcile turns it into the status; when the refusal may clear (a used-up
    // quota), the controller's back-off paces the attempts.
    nlohmann::json fields = log_fields;
    fields["error"] = reconcile::DescribeRejection(*executed.rejection);
    Log(spdlog::level::warn, "create refused", fields);
    return {.requeue = true};
  }
  // New progress queues the job by itself (the poller's on_change).
  controller::Result result;
  if (plan.requeue_after.has_value()) result.requeue_after = *plan.requeue_after;
  return result;
}

}  // namespace autodist::app
