#include "operator/controller/controller.h"

#include <spdlog/spdlog.h>

#include <atomic>

#include "operator/controller/cache.h"

namespace autodist::controller {

Controller::Controller(ControllerOptions options, Reconciler reconciler)
    : options_(std::move(options)), reconciler_(std::move(reconciler)), queue_(options_.backoff) {}

Controller::~Controller() { Stop(); }

EventHandler Controller::EnqueueObject() {
  const auto enqueue = [this](const nlohmann::json& object) {
    queue_.Add(ObjectKey(object));
    UpdateDepth();
  };
  return EventHandler{
      enqueue, [enqueue](const nlohmann::json&, const nlohmann::json& object) { enqueue(object); },
      enqueue};
}

EventHandler Controller::EnqueueOwner(const std::string& owner_kind,
                                      std::chrono::milliseconds batch) {
  const auto enqueue = [this, owner_kind, batch](const nlohmann::json& object) {
    const auto refs = object.value("/metadata/ownerReferences"_json_pointer, nlohmann::json());
    if (!refs.is_array()) return;
    for (const auto& ref : refs) {
      if (ref.value("controller", false) && ref.value("kind", "") == owner_kind) {
        // Owners live in their dependents' namespace (cross-namespace owners are not allowed).
        // AddAfter keeps the earlier time of a key already waiting: the burst's first event
        // decides when the owner is reconciled.
        queue_.AddAfter(ObjectKey(object.value("/metadata/namespace"_json_pointer, std::string()),
                                  ref.value("name", "")),
                        batch);
        UpdateDepth();
      }
    }
  };
  return EventHandler{enqueue,
                      [enqueue](const nlohmann::json& old_object, const nlohmann::json& object) {
                        // Both: an owner reference that changed concerns the old owner too.
                        enqueue(old_object);
                        enqueue(object);
                      },
                      enqueue};
}

void Controller::Start() {
  for (int i = 0; i < std::max(options_.workers, 1); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

void Controller::Stop() {
  queue_.ShutDown();
  for (auto& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  workers_.clear();
}

void Controller::UpdateDepth() {
  if (options_.metrics.queue_depth != nullptr) {
    options_.metrics.queue_depth->With({options_.name}).Set(static_cast<double>(queue_.Len()));
  }
}

void Controller::Work() {
  while (auto key = queue_.Get()) {
    UpdateDepth();
    Process(*key);
    queue_.Done(*key);
  }
}

void Controller::Process(const std::string& key) {
  // Numbers this reconcile in the logs, so the lines of one attempt can be told apart from the
  // retries of the same key.
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id++;
  const auto start = std::chrono::steady_clock::now();
  std::string outcome;
  try {
    const Result result = reconciler_(key);
    if (result.requeue_after.count() > 0) {
      queue_.Forget(key);
      queue_.AddAfter(key, result.requeue_after);
      outcome = "requeue_after";
    } else if (result.requeue) {
      queue_.AddRateLimited(key);
      outcome = "requeue";
    } else {
      queue_.Forget(key);
      outcome = "success";
    }
  } catch (const std::exception& e) {
    // The loop owns retries: a failed reconcile is tried again later, longer after each failure.
    spdlog::error("controller {}: reconcile #{} of {} failed (attempt {}): {}", options_.name, id,
                  key, queue_.NumRequeues(key) + 1, e.what());
    queue_.AddRateLimited(key);
    outcome = "error";
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (options_.metrics.reconciles != nullptr) {
    options_.metrics.reconciles->With({options_.name, outcome}).Inc();
  }
  if (options_.metrics.duration != nullptr) {
    options_.metrics.duration->With({options_.name}).Observe(took.count());
  }
}

}  // namespace autodist::controller
