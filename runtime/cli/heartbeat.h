// The heartbeat of one job member: a thread that tells the coordinator this process is alive and
// learns from its replies whether the job failed (then the process must stop) or every worker
// finished (then parameter servers may stop serving).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/coordinator/client.h"

namespace autodist::cli {

struct HeartbeatOptions {
  std::chrono::milliseconds interval{1000};
  // How long the coordinator may stay unreachable before this member gives up on the job.
  std::chrono::milliseconds coordinator_timeout{10000};
};

class Heartbeat {
 public:
  // Called on the heartbeat thread when the job failed (`job_failed`; the reason is the
  // coordinator's: "worker-1 (worker rank 1, pid 7) failed: ...") or the coordinator was lost
  // (the reason says so). It must not return (the process ends: a blocked training step cannot
  // be unwound from another thread, and nothing of this member's state outlives a failed job).
  using AbortHandler = std::function<void(const std::string& reason, bool job_failed)>;

  Heartbeat(coordinator::CoordinatorClient& coordinator, std::string node, HeartbeatOptions options,
            AbortHandler on_abort);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  static constexpr std::chrono::milliseconds kEndingInterval{50};

  // Blocks until the coordinator reports that every worker finished.
  void WaitWorkersFinished();

 private:
  void Loop();

  coordinator::CoordinatorClient& coordinator_;
  const std::string node_;
  const HeartbeatOptions options_;
  const AbortHandler on_abort_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  bool workers_finished_ = false;
  bool ending_ = false;  // someone waits for the workers to finish
  std::thread thread_;
};

}  // namespace autodist::cli
