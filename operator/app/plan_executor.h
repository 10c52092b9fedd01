// Carries out a reconcile::Plan against the API server, in the order plan.h prescribes: the
// status first (through the status subresource), then deletions, creations, the job's own
// deletion and the events. Every step tolerates what a lagging cache makes it meet again: an
// object already created, already gone.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "operator/app/event_recorder.h"
#include "operator/kube/api_error.h"
#include "operator/kube/client.h"
#include "operator/reconcile/plan.h"
#include "operator/reconcile/rejection.h"

namespace autodist::app {

enum class ExecuteOutcome {
  kDone,
  // The status write met a newer job (409): nothing else of the plan ran; reconcile again from
  // fresh state.
  kConflict,
};

struct ExecuteResult {
  ExecuteOutcome outcome = ExecuteOutcome::kDone;
  // The job's resourceVersion after the plan's status write; empty when there was none.
  std::string status_resource_version;
  // The create the API server refused (rejection.h); the creates after it were not tried.
  std::optional<reconcile::Rejection> rejection;
};

class PlanExecutor {
 public:
  explicit PlanExecutor(kube::Client& client) : client_(client), events_(client) {}

  // `job` is the object the plan was made from (with its resourceVersion). A create refused for
  // the request's own sake ends the creates and comes back as the result's rejection. Throws what
  // the API throws beyond that and the tolerated cases, so the controller retries with back-off.
  ExecuteResult Execute(const nlohmann::json& job, const reconcile::Plan& plan);

 private:
  // After a create met AlreadyExists (`exists`): nullopt when `job` controls the object of that
  // name (an earlier plan made it), else the refusal naming who holds it. Rethrows `exists` when
  // the object is gone by now, so the create is tried again.
  std::optional<reconcile::Rejection> NameHolder(const nlohmann::json& job,
                                                 const kube::Resource& resource,
                                                 const std::string& ns, const std::string& name,
                                                 const kube::ApiError& exists);

  kube::Client& client_;
  EventRecorder events_;
};

// The resource of objects of `api_version` ("v1", "scheduling.x-k8s.io/v1alpha1") and `kind`
// among those the reconciler makes (Pod, Service, ConfigMap, PodGroup, Event); their plural is
// the lower-case kind plus "s". Throws kInternal for any other kind.
kube::Resource ResourceOfApiVersion(const std::string& api_version, const std::string& kind);

}  // namespace autodist::app
