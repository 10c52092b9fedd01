// The small POSIX pieces every place that forks a child needs: a close-on-exec pipe, closing a
// descriptor once, reading a pipe to its end and reaping a child, each retried on EINTR.
#pragma once

#include <sys/types.h>

#include <string>

namespace autodist {

struct Pipe {
  int read = -1;
  int write = -1;
};

// A pipe whose ends are closed on exec. Throws autodist::Error (Unavailable) "<what>: pipe: ...".
Pipe MakePipe(const std::string& what);

// Closes `fd` unless it is -1, and sets it to -1.
void CloseIfOpen(int& fd);

// Reads `fd` until its end (or an error other than EINTR), returning what came.
std::string ReadToEnd(int fd);

// waitpid, retried on EINTR.
void WaitForPid(pid_t pid, int* status);

}  // namespace autodist
