// The controller's work queue (client-go's rate-limited work queue, in small):
// * de-duplicating: a key added again while it waits is queued once;
// * a key is never handed to two workers at once: re-added while being processed, it is queued
//   again only when that worker calls Done;
// * per-key exponential back-off: AddRateLimited waits longer after each failure until Forget;
// * AddAfter for requeue-after results; ShutDown wakes every waiting worker.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "operator/controller/backoff.h"

namespace autodist::controller {

class WorkQueue {
 public:
  // The default back-off is client-go's per-item default: 5 ms doubling up to 1000 s.
  explicit WorkQueue(BackoffPolicy backoff = {});

  void Add(const std::string& key);
  // Adds `key` once `delay` has passed (at once when it is not positive). A key already
  // waiting keeps the earlier of its two times.
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);
  // AddAfter with the key's back-off, which doubles with every call until Forget.
  void AddRateLimited(const std::string& key);
  // Clears the key's failure count (after it was processed successfully).
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is ready and marks it as being processed; nullopt once shut down.
  std::optional<std::string> Get();
  // Ends the processing of `key` (every Get must be followed by one Done).
  void Done(const std::string& key);

  // Wakes every Get (which then returns nullopt); later adds are ignored.
  void ShutDown();
  bool shutting_down() const;
  // Keys ready to be handed out (not counting delayed or in-process ones).
  size_t Len() const;
  // Keys waiting for their delay.
  size_t Delayed() const;

 private:
  using Clock = std::chrono::steady_clock;
  void AddLocked(const std::string& key);
  // Moves due delayed keys into the queue; returns when the next one is due.
  std::optional<Clock::time_point> PromoteLocked();

  BackoffPolicy backoff_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;       // queued, or to be queued again when processing ends
  std::set<std::string> processing_;  // handed out by Get, Done not yet called
  std::map<std::string, Clock::time_point> delayed_;
  std::map<std::string, int> failures_;
  bool shutting_down_ = false;
};

}  // namespace autodist::controller
