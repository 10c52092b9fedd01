#include "runtime/common/posix_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "runtime/common/error.h"

namespace autodist {

Pipe MakePipe(const std::string& what) {
  std::array<int, 2> fds{};
  AD_CHECK(::pipe2(fds.data(), O_CLOEXEC) == 0, kUnavailable, "{}: pipe: {}", what,
           std::strerror(errno));
  return {fds[0], fds[1]};
}

void CloseIfOpen(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string ReadToEnd(int fd) {
  std::string text;
  std::array<char, 4096> buffer{};
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer.data(), static_cast<size_t>(n));
  }
  return text;
}

void WaitForPid(pid_t pid, int* status) {
  while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace autodist
