#include "launcher/process_group.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <utility>

#include "launcher/live_process_groups.h"
#include "runtime/common/error.h"
#include "runtime/common/posix_process.h"

namespace autodist::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// How often the reader thread looks for exited children when no output arrives.
constexpr int kPollIntervalMs = 20;
constexpr size_t kReadChunk = size_t{64} * 1024;

// Process names become file names and message subjects: keep them to a safe alphabet.
void ValidateName(const std::string& name) {
  const bool valid_chars = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
  AD_CHECK(valid_chars && name != "." && name != "..", kInvalidArgument,
           "process name '{}' is invalid: expected letters, digits, '-', '_' or '.'", name);
}

}  // namespace

struct ProcessGroup::Child {
  std::string name;
  pid_t pid = 0;
  std::unique_ptr<ProcessLog> log;
  int output = -1;  // read end of the stdout+stderr pipe; -1 once the output ended (reader closes)
  bool stop_requested = false;
  bool reaped = false;
  Clock::time_point reaped_at;
  ProcessExit exit;
  bool queued = false;    // its exit is in exits_ (or was)
  bool returned = false;  // its exit was handed to the caller
};

ProcessGroup::ProcessGroup(std::string log_dir, LineSink echo)
    : log_dir_(std::move(log_dir)), echo_(std::move(echo)) {
  AD_CHECK(!log_dir_.empty(), kInvalidArgument, "the log directory must not be empty");
  std::error_code error;
  std::filesystem::create_directories(log_dir_, error);
  AD_CHECK(!error && std::filesystem::is_directory(log_dir_), kInvalidArgument,
           "cannot create the log directory '{}': {}", log_dir_,
           error ? error.message() : "a file of that name exists");
  std::array<int, 2> fds{};
  AD_CHECK(pipe2(fds.data(), O_CLOEXEC | O_NONBLOCK) == 0, kUnavailable,
           "cannot create the launcher's wake-up pipe: {}", std::strerror(errno));
  wake_read_ = fds[0];
  wake_write_ = fds[1];
  try {
    monitor_ = std::thread([this] { Monitor(); });
  } catch (const std::system_error& thread_error) {
    CloseIfOpen(wake_read_);
    CloseIfOpen(wake_write_);
    Fail(ErrorCode::kUnavailable, "cannot start the launcher's output reader thread: {}",
         thread_error.what());
  }
}

ProcessGroup::~ProcessGroup() {
  TerminateAll(kDestructorGrace);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  WakeMonitor();
  monitor_.join();
  CloseIfOpen(wake_read_);
  CloseIfOpen(wake_write_);
}

pid_t ProcessGroup::Start(const ProcessSpec& spec) {
  std::lock_guard start_lock(start_mutex_);
  ValidateName(spec.name);
  AD_CHECK(!spec.argv.empty() && !spec.argv[0].empty(), kInvalidArgument,
           "process '{}' has no executable (argv is empty)", spec.name);
  {
    std::lock_guard lock(mutex_);
    for (const auto& child : children_) {
      AD_CHECK(child->name != spec.name, kInvalidArgument,
               "two processes are named '{}'; process names must be unique", spec.name);
    }
  }

  auto child = std::make_unique<Child>();
  child->name = spec.name;
  child->log = std::make_unique<ProcessLog>(
      spec.name, (std::filesystem::path(log_dir_) / (spec.name + ".log")).string(), kKeptLines,
      echo_);

  const SpawnedChild spawned = SpawnChild(spec);
  child->pid = spawned.pid;
  child->output = spawned.output;
  {
    std::lock_guard lock(mutex_);
    children_.push_back(std::move(child));
  }
  WakeMonitor();
  return spawned.pid;
}

std::optional<ProcessExit> ProcessGroup::WaitAny(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const auto all_returned = [this] {
    return std::all_of(children_.begin(), children_.end(),
                       [](const auto& child) { return child->returned; });
  };
  if (exits_.empty() && all_returned()) return std::nullopt;
  if (!changed_.wait_for(lock, timeout, [this] { return !exits_.empty(); })) return std::nullopt;
  ProcessExit exit = std::move(exits_.front());
  exits_.pop_front();
  for (auto& child : children_) {
    if (child->pid == exit.pid) child->returned = true;
  }
  return exit;
}

std::vector<ProcessExit> ProcessGroup::TerminateAll(std::chrono::milliseconds grace) {
  std::unique_lock lock(mutex_);
  // A child not yet reaped keeps its pid, so its process-group id cannot have been reused.
  for (auto& child : children_) {
    if (child->reaped) continue;
    child->stop_requested = true;
    kill(-child->pid, SIGTERM);
  }
  const auto all_reaped = [this] {
    return std::all_of(children_.begin(), children_.end(),
                       [](const auto& child) { return child->reaped; });
  };
  if (!changed_.wait_for(lock, grace, all_reaped)) {
    for (auto& child : children_) {
      if (!child->reaped) kill(-child->pid, SIGKILL);
    }
  }
  changed_.wait(lock, [this] {
    return std::all_of(children_.begin(), children_.end(),
                       [](const auto& child) { return child->queued; });
  });
  std::vector<ProcessExit> exits(std::make_move_iterator(exits_.begin()),
                                 std::make_move_iterator(exits_.end()));
  exits_.clear();
  for (auto& child : children_) child->returned = true;
  return exits;
}

std::vector<std::string> ProcessGroup::Running() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& child : children_) {
    if (!child->returned) names.push_back(child->name);
  }
  return names;
}

bool ProcessGroup::AllExited() const { return Running().empty(); }

std::vector<std::string> ProcessGroup::LastLines(const std::string& name, size_t n) const {
  std::lock_guard lock(mutex_);
  return Find(name).log->LastLines(n);
}

std::string ProcessGroup::LogPath(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return Find(name).log->path();
}

pid_t ProcessGroup::Pid(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return Find(name).pid;
}

const ProcessGroup::Child& ProcessGroup::Find(const std::string& name) const {
  for (const auto& child : children_) {
    if (child->name == name) return *child;
  }
  std::string started;
  for (const auto& child : children_) started += (started.empty() ? "" : ", ") + child->name;
  Fail(ErrorCode::kNotFound, "no process named '{}' was started (started: {})", name,
       started.empty() ? "none" : started);
}

void ProcessGroup::WakeMonitor() const {
  const char byte = 1;
  // A full pipe already holds a wake-up; nothing else can go wrong that we could act on.
  [[maybe_unused]] const ssize_t written = write(wake_write_, &byte, 1);
}

bool ProcessGroup::ReadOutput(Child& child) {
  std::array<char, kReadChunk> buffer;
  const ssize_t n = read(child.output, buffer.data(), buffer.size());
  if (n > 0) {
    child.log->Append(std::string_view(buffer.data(), static_cast<size_t>(n)));
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  // End of output (or a read error, which ends it just the same).
  child.log->Finish();
  std::lock_guard lock(mutex_);
  CloseIfOpen(child.output);
  return false;
}

void ProcessGroup::Monitor() {
  std::vector<pollfd> fds;
  std::vector<Child*> readers;
  while (true) {
    fds.assign(1, pollfd{wake_read_, POLLIN, 0});
    readers.clear();
    bool stopping = false;
    {
      std::lock_guard lock(mutex_);
      stopping = stopping_;
      for (auto& child : children_) {
        if (child->output < 0) continue;
        fds.push_back(pollfd{child->output, POLLIN, 0});
        readers.push_back(child.get());
      }
    }
    if (stopping) {
      // Every child was reaped and its group killed. Take what the pipes still hold, but do not
      // wait: a process that left its group could keep a pipe open forever.
      for (Child* child : readers) {
        std::array<char, kReadChunk> buffer;
        ssize_t n;
        while ((n = read(child->output, buffer.data(), buffer.size())) > 0) {
          child->log->Append(std::string_view(buffer.data(), static_cast<size_t>(n)));
        }
        child->log->Finish();
        std::lock_guard lock(mutex_);
        CloseIfOpen(child->output);
      }
      return;
    }

    poll(fds.data(), fds.size(), kPollIntervalMs);
    if (fds[0].revents != 0) {
      std::array<char, 64> drain{};
      while (read(wake_read_, drain.data(), drain.size()) > 0) {
      }
    }
    for (size_t i = 0; i < readers.size(); ++i) {
      if (fds[i + 1].revents != 0) ReadOutput(*readers[i]);
    }
    ReapAndQueue(Clock::now());
  }
}

void ProcessGroup::ReapAndQueue(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  bool changed = false;
  for (auto& child : children_) {
    if (child->reaped) continue;
    siginfo_t info{};
    // WNOWAIT leaves the child a zombie, so its pid (the group id) stays reserved while the rest
    // of its group is killed: nothing a child started outlives it.
    const int result =
        waitid(P_PID, static_cast<id_t>(child->pid), &info, WEXITED | WNOHANG | WNOWAIT);
    const bool someone_else_reaped = result < 0 && errno == ECHILD;
    if (!someone_else_reaped && (result < 0 || info.si_pid != child->pid)) continue;
    detail::UnregisterLiveProcessGroup(child->pid);
    int status = 0;
    if (!someone_else_reaped) {
      kill(-child->pid, SIGKILL);
      WaitForPid(child->pid, &status);
    }
    ProcessExit& exit = child->exit;
    exit.name = child->name;
    exit.pid = child->pid;
    exit.stopped = child->stop_requested;
    if (someone_else_reaped) {
      // Only possible if other code in the launcher reaps children it did not start.
      exit.exit_code = -1;
    } else if (WIFSIGNALED(status)) {
      exit.exit_code = -1;
      exit.signal = WTERMSIG(status);
    } else {
      exit.exit_code = WEXITSTATUS(status);
    }
    child->reaped = true;
    child->reaped_at = now;
    changed = true;
  }
  for (auto& child : children_) {
    if (!child->reaped || child->queued) continue;
    if (child->output >= 0 && now - child->reaped_at < kOutputDrainTime) continue;
    child->exit.log_error = child->log->WriteError();
    exits_.push_back(child->exit);
    child->queued = true;
    changed = true;
  }
  if (changed) changed_.notify_all();
}

}  // namespace autodist::launcher
