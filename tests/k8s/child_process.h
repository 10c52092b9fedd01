// A container of the node agent as a local process: its own process group (so a shell's children
// are signalled with it), stdin from /dev/null, stdout and stderr appended to a log file, killed
// by the kernel if the agent's thread dies (PR_SET_PDEATHSIG), with a clean signal mask whatever
// the agent's threads block.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "tests/k8s/launch_spec.h"

namespace autodist::k8s {

struct ExitInfo {
  int exit_code = 0;  // 128 + signal for a process killed by a signal, as container runtimes say
  int signal = 0;     // 0 unless killed by a signal
};

class ChildProcess {
 public:
  // Starts `spec`. argv[0] without a '/' is looked up in the PATH of the container's environment
  // (`spec.env`, else the agent's). Throws autodist::Error (kNotFound: no such executable or
  // working directory; kFailedPrecondition: exec failed) with the runtime's wording, e.g.
  // `exec: "foo": executable file not found in $PATH`.
  // `inherit_env`: the container's environment starts from the agent's (PATH, HOME, ...).
  static ChildProcess Start(const LaunchSpec& spec, const std::string& log_path, bool inherit_env);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills the group (SIGKILL) and reaps the process if it is still running: a ChildProcess never
  // leaks a process.
  ~ChildProcess();

  // Reaps without blocking; the exit once the main process ended (then what is left of its
  // group is killed, as a runtime tears down a container whose main process exited).
  std::optional<ExitInfo> Poll();
  // Signals the whole process group.
  void Signal(int signal);
  bool running() const { return pid_ > 0 && !exit_.has_value(); }
  pid_t pid() const { return pid_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  void KillAndReap();
  pid_t pid_ = -1;
  std::optional<ExitInfo> exit_;
};

}  // namespace autodist::k8s
