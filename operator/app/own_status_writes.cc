#include "operator/app/own_status_writes.h"

#include <algorithm>

namespace autodist::app {
OwnStatusWrites::OwnStatusWrites(std::function<void(const std::string& key)> enqueue)
    : enqueue_(std::move(enqueue)) {}

OwnStatusWrites::Write::Write(OwnStatusWrites& owner, std::string key, std::string before)
    : owner_(owner), key_(std::move(key)) {
  owner_.Begin(key_, std::move(before));
}

OwnStatusWrites::Write::~Write() {
  if (!done_) owner_.End(key_, "");
}

void OwnStatusWrites::Write::Done(const std::string& after) {
  done_ = true;
  owner_.End(key_, after);
}

void OwnStatusWrites::Begin(const std::string& key, std::string before) {
  State state;
  state.before = std::move(before);
  std::lock_guard lock(mutex_);
  writes_[key] = std::move(state);
}

void OwnStatusWrites::End(const std::string& key, const std::string& after) {
  bool enqueue = false;
  {
    std::lock_guard lock(mutex_);
    const auto write = writes_.find(key);
    if (write == writes_.end() || !write->second.in_flight) return;  // forgotten meanwhile
    State& state = write->second;
    const bool seen = !after.empty() &&
                      std::find(state.held.begin(), state.held.end(), after) != state.held.end();
    // Held events other than the write itself are someone else's changes.
    enqueue = std::any_of(state.held.begin(), state.held.end(),
                          [&](const std::string& rv) { return after.empty() || rv != after; });
    // A write that changed nothing keeps the version and, on a real API server, makes no event:
    // nothing to wait for (a reconcile must not wait behind it).
    if (after.empty() || seen || state.before.empty() || after == state.before) {
      writes_.erase(write);
    } else {
      state.after = after;
      state.in_flight = false;
      state.held.clear();
    }
  }
  if (enqueue) enqueue_(key);
}

OwnStatusWrites::CachedJob OwnStatusWrites::Read(const std::string& key,
                                                 const controller::ObjectCache& cache) {
  std::lock_guard lock(mutex_);
  CachedJob cached{cache.Get(key)};
  const auto write = writes_.find(key);
  if (cached.job != nullptr && write != writes_.end() && !write->second.in_flight &&
      controller::ResourceVersionOf(*cached.job) == write->second.before) {
    write->second.awaited = true;
    cached.behind_own_write = true;
  }
  return cached;
}

bool OwnStatusWrites::ShouldEnqueue(const std::string& key, const nlohmann::json& object) {
  std::lock_guard lock(mutex_);
  const auto write = writes_.find(key);
  if (write == writes_.end()) return true;
  State& state = write->second;
  const std::string rv = controller::ResourceVersionOf(object);
  if (state.in_flight) {
    state.held.push_back(rv);
    return false;
  }
  // The event of the version the write was made on: a worker read it from the cache before this
  // handler ran. Someone else's change, as far as this write knows.
  if (rv == state.before) return true;
  const bool own = rv == state.after;
  const bool awaited = state.awaited;
  // Either this is the write's event, or the cache moved past it (a later change, or a relist
  // that skipped it): either way later events are not this write's.
  writes_.erase(write);
  return !own || awaited;
}

void OwnStatusWrites::Forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  writes_.erase(key);
}

size_t OwnStatusWrites::pending() const {
  std::lock_guard lock(mutex_);
  return writes_.size();
}

}  // namespace autodist::app
