// The operator's metric names, registered in one place so dashboards and docs have one list
// (docs/operator-internals.md). The reconciler updates the job metrics; the controller, the
// client observer and the leader elector's callbacks update the rest.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "operator/controller/controller.h"
#include "operator/kube/client.h"
#include "runtime/observe/metrics.h"

namespace autodist::controller {

struct OperatorMetrics {
  explicit OperatorMetrics(observe::Registry& registry);

  // AutoDistJob lifecycle, per job namespace (as Kubeflow's training-operator counts them).
  observe::Family<observe::Counter>&
      jobs_created;  // autodist_operator_jobs_created_total{namespace}
  observe::Family<observe::Counter>&
      jobs_successful;  // autodist_operator_jobs_successful_total{namespace}
  observe::Family<observe::Counter>& jobs_failed;  // autodist_operator_jobs_failed_total{namespace}
  observe::Family<observe::Counter>&
      jobs_restarted;                     // autodist_operator_jobs_restarted_total{namespace}
  observe::Family<observe::Gauge>& jobs;  // autodist_operator_jobs{state}: jobs now in each state
  // The loop.
  observe::Family<observe::Counter>&
      reconciles;  // autodist_operator_reconcile_total{controller,result}
  observe::Family<observe::Histogram>&
      reconcile_duration;  // autodist_operator_reconcile_duration_seconds{controller}
  observe::Family<observe::Gauge>& queue_depth;  // autodist_operator_workqueue_depth{controller}
  // The API server.
  observe::Family<observe::Counter>&
      api_errors;  // autodist_operator_api_errors_total{verb,resource,code}
  observe::Family<observe::Gauge>& leader;  // autodist_operator_leader: 1 while this replica leads

  // What ControllerOptions::metrics takes.
  ControllerOptions::Metrics ForController();
  // A ClientOptions::observer counting failed requests (code 0: the server was unreachable).
  decltype(kube::ClientOptions::observer) ClientObserver();
};

}  // namespace autodist::controller
