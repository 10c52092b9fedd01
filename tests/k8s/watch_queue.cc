#include "tests/k8s/watch_queue.h"

namespace autodist::k8s {

void WatchQueue::Write(const std::string& data) {
  std::lock_guard lock(mutex_);
  buffer_ += data;
  size_t nl;
  while ((nl = buffer_.find('\n')) != std::string::npos) {
    events_.push_back(nlohmann::json::parse(buffer_.substr(0, nl)));
    buffer_.erase(0, nl + 1);
  }
  cv_.notify_all();
}

void WatchQueue::Close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  cv_.notify_all();
}

WatchQueue::Batch WatchQueue::Take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty() || closed_ || stopping_; });
  Batch batch;
  batch.events.swap(events_);
  batch.closed = closed_;
  batch.stopping = stopping_;
  return batch;
}

void WatchQueue::Reset() {
  std::lock_guard lock(mutex_);
  closed_ = false;
  buffer_.clear();
}

void WatchQueue::Stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  cv_.notify_all();
}

}  // namespace autodist::k8s
