// Reconciling one AutoDistJob: from the job object, the children the controller observed, the
// coordinator's progress and the time, the plan that converges the cluster to the job (children
// to create or delete, the next status, events, when to look again). Pure and deterministic: the
// only input it fetches is the model, through ModelSource, and only while the job's Strategy
// still has to be compiled. docs/operator-reconcile.md describes the behaviour in full.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "operator/reconcile/model_source.h"
#include "operator/reconcile/options.h"
#include "operator/reconcile/plan.h"
#include "operator/reconcile/progress.h"
#include "operator/reconcile/rejection.h"
#include "operator/reconcile/time_format.h"

namespace autodist::reconcile {

// What the controller observed, from its informer caches.
struct Observed {
  nlohmann::json job;                        // the AutoDistJob, with its status
  std::vector<nlohmann::json> pods;          // pods labelled autodist.io/job-name=<job>
  std::optional<nlohmann::json> config_map;  // ConfigMap <job>-autodist, if it exists
  std::optional<nlohmann::json> service;     // Service <job>, if it exists
  std::optional<nlohmann::json> pod_group;   // PodGroup <job>, if it exists
  // NetworkPolicy <job>, if it exists (looked at only with options.network_policy.enabled).
  std::optional<nlohmann::json> network_policy;
  // Secret <job>-tls, if it exists (looked at only with options.tls.enabled).
  std::optional<nlohmann::json> tls_secret;
  std::optional<Progress> progress;  // from the chief's coordinator, when reachable
  // The API server's refusal of the controller's last attempt to create one of the job's
  // children; cleared by an attempt whose creates all succeed.
  std::optional<Rejection> rejection;
  TimePoint now;
};

// Throws autodist::Error only for what a retry may fix (kUnavailable from ModelSource, or
// kInternal); everything the user can fix ends in a condition instead.
Plan Reconcile(const Observed& observed, const ReconcilerOptions& options, ModelSource& models);

}  // namespace autodist::reconcile
