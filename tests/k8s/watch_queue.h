// A watch sink for in-process consumers: the events a watch writes, parsed into a queue that a
// consumer thread drains. Write runs under the store's lock, so it only appends.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/k8s/watch.h"

namespace autodist::k8s {

// Appends `data` (a watch stream: one JSON event per line) to `partial` and moves each complete
// line, parsed, to `events`; an incomplete last line stays in `partial` for the next write.
void AppendEventLines(const std::string& data, std::string& partial,
                      std::vector<nlohmann::json>& events);

class WatchQueue : public WatchSink {
 public:
  struct Batch {
    std::vector<nlohmann::json> events;
    bool closed = false;    // the watch ended (dropped, timed out): watch again
    bool stopping = false;  // Stop() was called
  };

  void Write(const std::string& data) override;
  void Close() override;
  size_t Backlog() const override { return 0; }

  // Waits up to `timeout` for events, the end of the watch or Stop(); takes what is there.
  Batch Take(std::chrono::milliseconds timeout);
  // Before the next watch: the previous one is over, its partial line is void.
  void Reset();
  void Stop();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string buffer_;
  std::vector<nlohmann::json> events_;
  bool closed_ = false;
  bool stopping_ = false;
};

}  // namespace autodist::k8s
