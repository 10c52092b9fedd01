// Running jobs' progress, polled off the reconcile workers. A reconcile only reads the last
// progress polled (Latest: a map lookup), so a coordinator that is slow or unreachable (a
// blackholed address answers nothing until the read's timeout) delays nobody's reconcile; the
// poller's own threads take the reads, each bounded by a short timeout, and a job whose progress
// changed is queued for a reconcile (`on_change`), which writes it to the status.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "operator/reconcile/progress.h"

namespace autodist::app {

struct ProgressPollerOptions {
  std::chrono::milliseconds interval{std::chrono::seconds(5)};  // between reads of one job
  std::chrono::milliseconds timeout{std::chrono::seconds(1)};   // of one read
  // Reads in flight at once: this many unreachable coordinators hold back the others' reads by
  // at most `timeout`.
  int threads = 4;
};

class ProgressPoller {
 public:
  // `read` asks the coordinator (host:port) for its progress within the timeout (nullopt: not
  // reachable); `on_change` is called with a job's key when its progress changed.
  using Read = std::function<std::optional<reconcile::Progress>(const std::string& coordinator,
                                                                std::chrono::milliseconds timeout)>;
  ProgressPoller(Read read, std::function<void(const std::string& key)> on_change,
                 ProgressPollerOptions options = {});
  ~ProgressPoller();  // stops
  ProgressPoller(const ProgressPoller&) = delete;
  ProgressPoller& operator=(const ProgressPoller&) = delete;

  // Polls `coordinator` for the job `key` from now on, the first read at once; a call for a job
  // already tracked at that coordinator changes nothing. Returns the coordinator the job was
  // polled at before, when this replaces it (a new gang's), whose reading is dropped.
  std::optional<std::string> Track(const std::string& key, const std::string& coordinator);
  // Stops polling the job (finished, or deleted) and drops what was read. Returns the
  // coordinator it was polled at, if it was.
  std::optional<std::string> Forget(const std::string& key);
  // The job's progress as last read; nullopt before the first successful read. Never blocks on
  // the network.
  std::optional<reconcile::Progress> Latest(const std::string& key) const;

  size_t tracked() const;

 private:
  struct Entry {
    std::string coordinator;
    std::optional<reconcile::Progress> latest;
    std::chrono::steady_clock::time_point due;
    bool reading = false;
    uint64_t generation = 0;  // a Track to another coordinator, or a Forget, ends a read's say
  };
  void Poll(const std::stop_token& stop);

  Read read_;
  std::function<void(const std::string& key)> on_change_;
  ProgressPollerOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  uint64_t wakes_ = 0;  // counts Tracks: a waiting thread looks again when it moved
  std::map<std::string, Entry> entries_;
  uint64_t next_generation_ = 0;
  std::vector<std::jthread> threads_;
};

}  // namespace autodist::app
