// How a child process of `autodist run` ended, and the words the launcher uses to say so.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace autodist::launcher {

struct ProcessExit {
  std::string name;  // the process's name, e.g. "worker-0"
  pid_t pid = 0;
  int exit_code = 0;      // when it exited by itself; -1 when a signal ended it
  int signal = 0;         // the signal that ended it; 0 when it exited by itself
  bool stopped = false;   // the group had asked it to stop (ProcessGroup::TerminateAll)
  std::string log_error;  // why its log file is incomplete; "" normally

  // True unless it exited with code 0.
  bool failed() const { return signal != 0 || exit_code != 0; }
};

// "SIGKILL" for 9; "signal 77" for a number without a name.
std::string SignalName(int signal);

// One clause about the exit: "worker-1 exited with code 3", "ps-0 was killed by SIGKILL",
// "worker-0 exited normally". Adds " after being asked to stop" when `stopped`.
std::string DescribeExit(const ProcessExit& exit);

// The message for a failed process: the description, where its log is, and its last lines, each
// prefixed like in the log file:
//   worker-1 exited with code 3; last lines of /tmp/run/logs/worker-1.log:
//     [worker-1] loading model
//     [worker-1] error: no such file
std::string FailureReport(const ProcessExit& exit, const std::string& log_path,
                          const std::vector<std::string>& last_lines);

}  // namespace autodist::launcher
