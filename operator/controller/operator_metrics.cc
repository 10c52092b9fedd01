#include "operator/controller/operator_metrics.h"

namespace autodist::controller {

OperatorMetrics::OperatorMetrics(observe::Registry& registry)
    : jobs_created(registry.AddCounter("autodist_operator_jobs_created_total",
                                       "AutoDistJobs seen created", {"namespace"})),
      jobs_successful(registry.AddCounter("autodist_operator_jobs_successful_total",
                                          "AutoDistJobs that succeeded", {"namespace"})),
      jobs_failed(registry.AddCounter("autodist_operator_jobs_failed_total",
                                      "AutoDistJobs that failed", {"namespace"})),
      jobs_restarted(registry.AddCounter("autodist_operator_jobs_restarted_total",
                                         "AutoDistJob restarts after a failed replica",
                                         {"namespace"})),
      jobs(registry.AddGauge("autodist_operator_jobs", "AutoDistJobs by status.state", {"state"})),
      reconciles(registry.AddCounter("autodist_operator_reconcile_total",
                                     "Reconciles by outcome (success, error, requeue, "
                                     "requeue_after)",
                                     {"controller", "result"})),
      reconcile_duration(registry.AddHistogram(
          "autodist_operator_reconcile_duration_seconds", "Time spent in one reconcile",
          observe::ExponentialBuckets(0.001, 2, 15), {"controller"})),
      queue_depth(registry.AddGauge("autodist_operator_workqueue_depth",
                                    "Keys waiting in the work queue", {"controller"})),
      api_errors(registry.AddCounter("autodist_operator_api_errors_total",
                                     "Failed API-server requests (code 0: unreachable)",
                                     {"verb", "resource", "code"})),
      leader(registry.AddGauge("autodist_operator_leader",
                               "1 while this replica holds the leader-election lease")) {}

ControllerOptions::Metrics OperatorMetrics::ForController() {
  return {&reconciles, &reconcile_duration, &queue_depth};
}

decltype(kube::ClientOptions::observer) OperatorMetrics::ClientObserver() {
  return [this](const std::string& verb, const kube::Resource& resource, int code,
                std::chrono::duration<double>) {
    if (code == 0 || code >= 400) {
      api_errors.With({verb, resource.Name(), std::to_string(code)}).Inc();
    }
  };
}

}  // namespace autodist::controller
