#include "operator/app/progress_poller.h"

#include <algorithm>

namespace autodist::app {

ProgressPoller::ProgressPoller(Read read, std::function<void(const std::string& key)> on_change,
                               ProgressPollerOptions options)
    : read_(std::move(read)), on_change_(std::move(on_change)), options_(options) {
  for (int i = 0; i < std::max(options_.threads, 1); ++i) {
    threads_.emplace_back([this](const std::stop_token& stop) { Poll(stop); });
  }
}

ProgressPoller::~ProgressPoller() {
  for (std::jthread& thread : threads_) thread.request_stop();
  wake_.notify_all();
  threads_.clear();  // joins
}

std::optional<std::string> ProgressPoller::Track(const std::string& key,
                                                 const std::string& coordinator) {
  std::optional<std::string> replaced;
  {
    const std::lock_guard lock(mutex_);
    const auto found = entries_.find(key);
    if (found != entries_.end()) {
      if (found->second.coordinator == coordinator) return std::nullopt;
      replaced = found->second.coordinator;
    }
    Entry& entry = entries_[key];
    entry = Entry{coordinator, std::nullopt, std::chrono::steady_clock::now(), false,
                  ++next_generation_};
    ++wakes_;
  }
  wake_.notify_all();
  return replaced;
}

std::optional<std::string> ProgressPoller::Forget(const std::string& key) {
  const std::lock_guard lock(mutex_);
  const auto found = entries_.find(key);
  if (found == entries_.end()) return std::nullopt;
  std::string coordinator = std::move(found->second.coordinator);
  entries_.erase(found);
  return coordinator;
}

std::optional<reconcile::Progress> ProgressPoller::Latest(const std::string& key) const {
  const std::lock_guard lock(mutex_);
  const auto found = entries_.find(key);
  return found == entries_.end() ? std::nullopt : found->second.latest;
}

size_t ProgressPoller::tracked() const {
  const std::lock_guard lock(mutex_);
  return entries_.size();
}

void ProgressPoller::Poll(const std::stop_token& stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    // The job whose read is due first, among those no other thread is reading.
    auto next = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (!it->second.reading && (next == entries_.end() || it->second.due < next->second.due)) {
        next = it;
      }
    }
    const uint64_t seen = wakes_;
    if (next == entries_.end()) {
      wake_.wait(lock, stop, [&] { return wakes_ != seen; });
      continue;
    }
    if (next->second.due > std::chrono::steady_clock::now()) {
      // A Track may bring an earlier one: look again when woken.
      wake_.wait_until(lock, stop, next->second.due, [&] { return wakes_ != seen; });
      continue;
    }
    const std::string key = next->first;
    const std::string coordinator = next->second.coordinator;
    const uint64_t generation = next->second.generation;
    next->second.reading = true;
    lock.unlock();
    const std::optional<reconcile::Progress> read = read_(coordinator, options_.timeout);
    lock.lock();
    const auto entry = entries_.find(key);
    if (entry == entries_.end() || entry->second.generation != generation) continue;
    entry->second.reading = false;
    entry->second.due = std::chrono::steady_clock::now() + options_.interval;
    if (!read.has_value() || entry->second.latest == read) continue;
    entry->second.latest = read;
    lock.unlock();
    on_change_(key);
    lock.lock();
  }
}

}  // namespace autodist::app
