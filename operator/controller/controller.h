// The reconcile loop (controller-runtime's Controller): N workers take keys ("namespace/name")
// from a WorkQueue and call the reconciler, which reads current state and converges. The loop
// owns retries, so a reconciler only reports the outcome:
// * returns {}                → done (the key's back-off is forgotten);
// * returns {.requeue_after}  → look again after that long (polling a slow external state);
// * returns {.requeue = true} → look again with the key's exponential back-off;
// * throws                    → logged, counted, retried with back-off. The reconciler maps
//   terminal (user) errors to a status condition itself and returns normally (docs/errors.md).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "operator/controller/informer.h"
#include "operator/controller/work_queue.h"
#include "runtime/observe/metrics.h"

namespace autodist::controller {

struct Result {
  bool requeue = false;
  std::chrono::milliseconds requeue_after{0};
};

using Reconciler = std::function<Result(const std::string& key)>;

struct ControllerOptions {
  std::string name = "controller";  // the `controller` label of its metrics, and in logs
  int workers = 1;
  BackoffPolicy backoff;  // per key, for errors and requeue
  // When set, the controller keeps autodist_operator_reconcile_total{controller,result},
  // autodist_operator_reconcile_duration_seconds{controller} and
  // autodist_operator_workqueue_depth{controller} here (operator_metrics.h registers them).
  struct Metrics {
    observe::Family<observe::Counter>* reconciles = nullptr;
    observe::Family<observe::Histogram>* duration = nullptr;
    observe::Family<observe::Gauge>* queue_depth = nullptr;
  } metrics;
};

class Controller {
 public:
  Controller(ControllerOptions options, Reconciler reconciler);
  ~Controller();  // stops
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  WorkQueue& queue() { return queue_; }

  // An informer handler that enqueues the object's own key on add, update and delete.
  EventHandler EnqueueObject();
  // An informer handler that enqueues the key of the object's controlling owner of `owner_kind`
  // (its ownerReference with controller: true), e.g. a pod's AutoDistJob. With a positive
  // `batch`, the owner is queued that long after the first event of a burst, and the events
  // that follow within it join the same reconcile (as Kubernetes' Job controller batches pod
  // events): a reconcile that creates ten children then gets one reconcile for their ten ADDED
  // events rather than two or three.
  EventHandler EnqueueOwner(const std::string& owner_kind,
                            std::chrono::milliseconds batch = std::chrono::milliseconds(0));

  void Start();
  // Shuts the queue down and joins the workers after their current reconcile.
  void Stop();

 private:
  void Work();
  void Process(const std::string& key);
  void UpdateDepth();

  ControllerOptions options_;
  Reconciler reconciler_;
  WorkQueue queue_;
  std::vector<std::thread> workers_;
};

}  // namespace autodist::controller
