#include "operator/controller/work_queue.h"

namespace autodist::controller {

WorkQueue::WorkQueue(BackoffPolicy backoff) : backoff_(backoff) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.contains(key)) return;
  dirty_.insert(key);
  // A key being processed is queued again by Done, so it never runs on two workers at once.
  if (processing_.contains(key)) return;
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mutex_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) {
    Add(key);
    return;
  }
  std::lock_guard lock(mutex_);
  if (shutting_down_) return;
  const auto when = Clock::now() + delay;
  auto [it, inserted] = delayed_.emplace(key, when);
  if (!inserted && when < it->second) it->second = when;
  // A sleeping worker may be waiting for a later deadline; let it re-compute.
  cv_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  int failures = 0;
  {
    std::lock_guard lock(mutex_);
    failures = failures_[key]++;
  }
  AddAfter(key, backoff_.Delay(failures));
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::optional<WorkQueue::Clock::time_point> WorkQueue::PromoteLocked() {
  const auto now = Clock::now();
  std::optional<Clock::time_point> next;
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if (it->second <= now) {
      AddLocked(it->first);
      it = delayed_.erase(it);
    } else {
      if (!next || it->second < *next) next = it->second;
      ++it;
    }
  }
  return next;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (shutting_down_) return std::nullopt;
    const auto next_due = PromoteLocked();
    if (!queue_.empty()) break;
    if (next_due) {
      cv_.wait_until(lock, *next_due);
    } else {
      cv_.wait(lock);
    }
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mutex_);
  processing_.erase(key);
  if (dirty_.contains(key) && !shutting_down_) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mutex_);
  shutting_down_ = true;
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mutex_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

size_t WorkQueue::Delayed() const {
  std::lock_guard lock(mutex_);
  return delayed_.size();
}

}  // namespace autodist::controller
