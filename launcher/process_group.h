// The local processes of `autodist run` (coordinator, parameter servers, workers): started,
// logged, watched and stopped as one group, so that nothing outlives the run.
//
// Every child (started by child_process.h)
//   * runs in its own process group, so stopping it also stops whatever it started, and a Ctrl-C
//     at the terminal reaches only the launcher, which then stops the children in order;
//   * gets SIGTERM if the launcher dies (PR_SET_PDEATHSIG). The kernel sends it when the *thread*
//     that started the child exits, so call Start from a thread that outlives the group (main);
//   * has stdin from /dev/null and stdout+stderr in <log_dir>/<name>.log, every line prefixed
//     "[<name>] " (see ProcessLog);
//   * starts with default signal dispositions and an empty signal mask, whatever the launcher set.
// When a child exits, what is left of its process group is killed with it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launcher/child_process.h"
#include "launcher/process_exit.h"
#include "launcher/process_log.h"

namespace autodist::launcher {

class ProcessGroup {
 public:
  // How many recent output lines are kept per process for LastLines.
  static constexpr size_t kKeptLines = 200;
  // After a process exits, how long its exit waits for the rest of its output (which may still
  // be in the pipe) before it is reported anyway.
  static constexpr std::chrono::milliseconds kOutputDrainTime{2000};
  // The grace period the destructor gives processes still running.
  static constexpr std::chrono::milliseconds kDestructorGrace{3000};

  // Creates `log_dir` (and its parents); throws autodist::Error naming it when that fails.
  // `echo`, when set, also receives every output line (on the group's reader thread).
  explicit ProcessGroup(std::string log_dir, LineSink echo = nullptr);
  // Stops what still runs (TerminateAll(kDestructorGrace)) and reaps everything.
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  // Starts a process and returns its pid once its executable is running. Throws autodist::Error:
  // InvalidArgument for a bad or duplicate name, an empty argv or a file that is not executable;
  // NotFound for a missing executable (each naming the process and the path).
  pid_t Start(const ProcessSpec& spec);

  // Waits up to `timeout` for the next exit and returns it; nullopt on timeout, or at once when
  // every process's exit has already been returned. Each exit is returned exactly once (by
  // WaitAny or TerminateAll), in the order the processes exited.
  std::optional<ProcessExit> WaitAny(std::chrono::milliseconds timeout);

  // Stops every process still running: SIGTERM to its process group, up to `grace` for all of
  // them to exit, then SIGKILL. Returns the exits not yet returned by WaitAny (including ones that
  // happened before this call), once every process has been reaped.
  std::vector<ProcessExit> TerminateAll(std::chrono::milliseconds grace);

  // Names of the processes whose exit has not been returned yet, in the order they started.
  std::vector<std::string> Running() const;
  bool AllExited() const;

  // The last `n` output lines of a process, without prefix (also after it exited). Throws
  // NotFound for a name that was never started.
  std::vector<std::string> LastLines(const std::string& name, size_t n) const;
  std::string LogPath(const std::string& name) const;
  pid_t Pid(const std::string& name) const;

  const std::string& log_dir() const { return log_dir_; }

 private:
  struct Child;

  // The reader thread: drains every output pipe, reaps exited children and queues their exits.
  void Monitor();
  // Reads what one pipe holds; returns false at end of output.
  bool ReadOutput(Child& child);
  // Reaps children that exited (under mutex_) and queues the exits whose output has ended.
  void ReapAndQueue(std::chrono::steady_clock::time_point now);
  void WakeMonitor() const;
  const Child& Find(const std::string& name) const;  // under mutex_

  const std::string log_dir_;
  const LineSink echo_;
  int wake_read_ = -1;  // self-pipe that interrupts the reader thread's poll()
  int wake_write_ = -1;

  std::mutex start_mutex_;  // one Start at a time, so a name is checked and claimed together
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a child was reaped or an exit queued
  std::vector<std::unique_ptr<Child>> children_;
  std::deque<ProcessExit> exits_;  // exits queued, not yet returned
  bool stopping_ = false;

  std::thread monitor_;
};

}  // namespace autodist::launcher
