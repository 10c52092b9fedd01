#include "tests/k8s/watch_queue.h"

namespace autodist::k8s {

void AppendEventLines(const std::string& data, std::string& partial,
                      std::vector<nlohmann::json>& events) {
  partial += data;
  size_t nl;
  while ((nl = partial.find('\n')) != std::string::npos) {
    events.push_back(nlohmann::json::parse(partial.substr(0, nl)));
    partial.erase(0, nl + 1);
  }
}

void WatchQueue::Write(const std::string& data) {
  std::lock_guard lock(mutex_);
  AppendEventLines(data, buffer_, events_);
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
