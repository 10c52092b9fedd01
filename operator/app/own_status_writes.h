// The operator's own status writes, told apart from everyone else's changes to a job. A status
// write comes back as a MODIFIED event of the job; reconciling on it again finds nothing to do
// (a plan leaves nothing for the next reconcile to repeat, operator-reconcile.md), so the
// controller skips that event, as controller-runtime's GenerationChangedPredicate would skip
// every status-only change. Unlike that predicate it skips only the operator's own writes, so
// someone else's edit of a status is still reconciled.
//
// The write's event can come before the write's response (the watch is another connection):
// while a write is in flight, the job's events are held, and once its resourceVersion is known
// the held events that are not the write are queued (the job is being reconciled meanwhile, so
// they would only have been queued for after it anyway).
//
// One case still needs the write's event: a reconcile that would run (for a child's event) while
// the cache still holds the version the write replaced. It would plan from a stale status, so it
// is not run then; it waits for the write's event, which queues the job again.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "operator/controller/cache.h"

namespace autodist::app {

class OwnStatusWrites {
 public:
  // How a held event queues the job (the controller's work queue).
  explicit OwnStatusWrites(std::function<void(const std::string& key)> enqueue);

  // Brackets one status write of the job `key`, made on resourceVersion `before`: events of the
  // job are held from construction until Done (or destruction: the outcome is unknown, so every
  // held event is queued).
  class Write {
   public:
    Write(OwnStatusWrites& owner, std::string key, std::string before);
    ~Write();
    Write(const Write&) = delete;
    Write& operator=(const Write&) = delete;
    // The write succeeded and the job is now at `after` ("" when it did not happen).
    void Done(const std::string& after);

   private:
    OwnStatusWrites& owner_;
    std::string key_;
    bool done_ = false;
  };

  struct CachedJob {
    controller::ObjectPtr job;  // null when the job is not cached (deleted)
    // The cache still holds the version the operator's last write replaced: don't reconcile
    // now; the write's event queues the job again.
    bool behind_own_write = false;
  };
  // The job `key` as cached. Read under the same lock as ShouldEnqueue, so the write's event
  // cannot slip between reading the cache and noting that a reconcile waits for it.
  CachedJob Read(const std::string& key, const controller::ObjectCache& cache);

  // For the job informer's update handler (after the cache holds `object`): false when `object`
  // is the operator's own write that no reconcile waits for, or is held until a write in flight
  // is done.
  bool ShouldEnqueue(const std::string& key, const nlohmann::json& object);
  // The job is gone: nothing more will come of its writes.
  void Forget(const std::string& key);

  size_t pending() const;  // writes in flight or whose event has not come yet (tests)

 private:
  struct State {
    std::string before;
    std::string after;  // "" while the write is in flight
    bool in_flight = true;
    bool awaited = false;           // a reconcile found the cache behind and waits for the event
    std::vector<std::string> held;  // versions of events that came while in flight
  };
  void Begin(const std::string& key, std::string before);
  void End(const std::string& key, const std::string& after);

  std::function<void(const std::string& key)> enqueue_;
  mutable std::mutex mutex_;
  std::map<std::string, State> writes_;
};

}  // namespace autodist::app
