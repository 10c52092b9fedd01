// The AutoDistJob controller: informers over the jobs and the children the operator made (pods,
// Services, ConfigMaps; labelled app.kubernetes.io/managed-by=autodist-operator), a work queue
// of job keys fed by their events (a child's event queues its owner), and N workers that each
// observe one job from the caches, ask the reconciler (operator/reconcile) for a plan and carry
// it out (plan_executor.h). Level-triggered: a reconcile looks at the whole state, never at the
// event that queued it, so a lost event costs nothing but time.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "operator/app/operator_options.h"
#include "operator/app/own_status_writes.h"
#include "operator/app/plan_executor.h"
#include "operator/app/progress_poller.h"
#include "operator/app/progress_reader.h"
#include "operator/controller/controller.h"
#include "operator/controller/informer.h"
#include "operator/controller/operator_metrics.h"
#include "operator/kube/client.h"

namespace autodist::app {

class JobController {
 public:
  JobController(kube::Client& client, OperatorOptions options,
                controller::OperatorMetrics& metrics);
  ~JobController();  // stops
  JobController(const JobController&) = delete;
  JobController& operator=(const JobController&) = delete;

  // Starts the informers, waits until their caches are synced, then the workers.
  void Start();
  void Stop();
  bool Synced() const;

  // One reconcile of the job `namespace/name` (what a worker runs; public for tests).
  controller::Result Reconcile(const std::string& key);

 private:
  struct Scope;  // the informers of one watched namespace (or of all)

  Scope& ScopeOf(const std::string& ns) const;
  void UpdateStateGauge();
  // The job informer's handler: every change queues the job, except the operator's own status
  // writes (own_status_writes.h).
  controller::EventHandler EnqueueJob();

  // The last refused create of each job (by key, for the job of that uid): the reconciler's
  // input, since only the API server's answer tells it (reconcile/rejection.h). In memory: an
  // operator that restarts tries the create again and hears the refusal anew.
  std::optional<reconcile::Rejection> RejectionOf(const std::string& key, const std::string& uid);
  void NoteCreates(const std::string& key, const std::string& uid, bool attempted,
                   const std::optional<reconcile::Rejection>& rejection);

  kube::Client& client_;
  OperatorOptions options_;
  controller::OperatorMetrics& metrics_;
  PlanExecutor executor_;
  OwnStatusWrites own_writes_;
  ProgressReader progress_;  // the poller's reads, over gRPC
  std::vector<std::unique_ptr<Scope>> scopes_;
  std::unique_ptr<controller::Controller> controller_;
  // After controller_: it queues jobs, so it stops first.
  ProgressPoller progress_poller_;
  std::mutex rejections_mutex_;
  std::map<std::string, std::pair<std::string, reconcile::Rejection>> rejections_;
  std::atomic<uint64_t> reconcile_ids_{0};
  std::atomic<bool> started_{false};
  std::jthread gauge_thread_;
};

}  // namespace autodist::app
