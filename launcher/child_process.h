// Starting one child of `autodist run`: fork and exec with the child set up as ProcessGroup
// (process_group.h) promises: its own process group, SIGTERM when the launcher dies, stdin from
// /dev/null, stdout and stderr into one pipe, default signal dispositions, an empty signal mask.
// The child reports a failed setup or exec back through a close-on-exec pipe, so that a missing
// or non-executable file is an error of the call, not a child that exits at once.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace autodist::launcher {

struct ProcessSpec {
  std::string name;               // "worker-0", "ps-1": in messages and as the log file's name
  std::vector<std::string> argv;  // argv[0] is the executable's path (no PATH search)
  std::map<std::string, std::string> env;  // added to (or replacing in) the launcher's environment
  // A network namespace (an open descriptor, netemu/network_namespace.h) the child joins before
  // exec; -1: the launcher's own.
  int network_namespace = -1;
  // stdout and stderr stay the launcher's own instead of going into the output pipe.
  bool share_output = false;
};

struct SpawnedChild {
  pid_t pid = 0;
  int output = -1;  // read end of its stdout+stderr pipe, non-blocking, owned by the caller;
                    // -1 with share_output
};

// Starts `spec` (argv checked non-empty by the caller) once its executable is running, and
// registers its process group for clean-up at the launcher's exit (live_process_groups.h).
// Throws autodist::Error naming the process and the path: NotFound for a missing executable,
// InvalidArgument for a file that is not executable or a bad environment variable name,
// Unavailable when pipes or fork fail.
SpawnedChild SpawnChild(const ProcessSpec& spec);

// The exit code a shell gives a process that ended with wait status `status`: its own, or
// 128 + the signal that killed it.
int ShellExitCode(int status);

}  // namespace autodist::launcher
