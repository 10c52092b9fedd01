#include "runtime/cli/heartbeat.h"

#include <fmt/format.h>

#include "runtime/common/error.h"

namespace autodist::cli {

Heartbeat::Heartbeat(coordinator::CoordinatorClient& coordinator, std::string node,
                     HeartbeatOptions options, AbortHandler on_abort)
    : coordinator_(coordinator),
      node_(std::move(node)),
      options_(options),
      on_abort_(std::move(on_abort)),
      thread_([this] { Loop(); }) {}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Heartbeat::WaitWorkersFinished() {
  std::unique_lock lock(mutex_);
  ending_ = true;
  changed_.notify_all();  // ask at once rather than after a whole interval
  changed_.wait(lock, [this] { return workers_finished_ || stopping_; });
}

void Heartbeat::Loop() {
  using Clock = std::chrono::steady_clock;
  auto last_contact = Clock::now();
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    std::string abort_reason;
    bool job_failed = false;
    bool finished = false;
    try {
      const coordinator::HeartbeatResult reply = coordinator_.Heartbeat(node_, 0);
      last_contact = Clock::now();
      if (reply.abort) {
        abort_reason = reply.reason;
        job_failed = true;
      }
      finished = reply.workers_finished;
    } catch (const Error& error) {
      const auto silent = Clock::now() - last_contact;
      // Once every worker has finished, the chief (and its coordinator) may be gone before
      // this member ends: that is the job's normal end, not a loss.
      std::lock_guard state(mutex_);
      if (silent > options_.coordinator_timeout && !stopping_ && !workers_finished_) {
        abort_reason = fmt::format(
            "lost the coordinator: no heartbeat was answered for {:.1f} s (last error: {})",
            std::chrono::duration<double>(silent).count(), error.what());
      }
    }
    if (!abort_reason.empty()) on_abort_(abort_reason, job_failed);
    lock.lock();
    if (finished && !workers_finished_) {
      workers_finished_ = true;
      changed_.notify_all();
    }
    // At the end of a job the members only wait for each other: ask often, so the job ends
    // promptly once the last worker is done.
    const bool was_ending = ending_;
    const auto interval =
        ending_ ? std::min(options_.interval, kEndingInterval) : options_.interval;
    changed_.wait_for(lock, interval, [&] { return stopping_ || ending_ != was_ending; });
  }
}

}  // namespace autodist::cli
