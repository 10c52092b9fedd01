#include "launcher/netemu/network_namespace.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "runtime/common/error.h"
#include "runtime/common/posix_process.h"

namespace autodist::netemu {
namespace {

// The holder, between fork and its end: only async-signal-safe calls (the creator may have
// other threads, whose locks the child would inherit held).
[[noreturn]] void RunHolder(pid_t creator, int keep_alive, int status) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != creator) _exit(1);
  // Its own process group: a Ctrl-C at the terminal goes to the launcher, which stops its
  // members over this network before the network goes away.
  setpgid(0, 0);
  int error = 0;
  if (unshare(CLONE_NEWNET) != 0) error = errno;
  [[maybe_unused]] const ssize_t written = write(status, &error, sizeof error);
  if (error != 0) _exit(1);
  // Keep only the pipe that ties this process to its creator.
  if (dup2(keep_alive, STDIN_FILENO) < 0) _exit(1);
  close_range(1, ~0U, 0);
  char byte = 0;
  while (true) {
    const ssize_t n = read(STDIN_FILENO, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);
  }
}

}  // namespace

NetworkNamespace::NetworkNamespace(std::string name) : name_(std::move(name)) {
  const std::string what = fmt::format("network namespace for '{}'", name_);
  Pipe keep_alive = MakePipe(what);
  Pipe status;
  try {
    status = MakePipe(what);
  } catch (const Error&) {
    CloseIfOpen(keep_alive.read);
    CloseIfOpen(keep_alive.write);
    throw;
  }
  const pid_t creator = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) RunHolder(creator, keep_alive.read, status.write);
  const int fork_error = errno;
  CloseIfOpen(keep_alive.read);
  CloseIfOpen(status.write);
  if (pid < 0) {
    CloseIfOpen(keep_alive.write);
    CloseIfOpen(status.read);
    Fail(ErrorCode::kUnavailable, "{}: fork: {}", what, std::strerror(fork_error));
  }
  int error = -1;
  const bool reported = ::read(status.read, &error, sizeof error) == sizeof error;
  CloseIfOpen(status.read);
  if (!reported || error != 0) {
    CloseIfOpen(keep_alive.write);
    ::kill(pid, SIGKILL);
    WaitForPid(pid, nullptr);
    AD_CHECK(reported, kUnavailable, "{}: the holder process exited before reporting", what);
    Fail(ErrorCode::kFailedPrecondition,
         "cannot create a network namespace: unshare(CLONE_NEWNET): {} (an emulated network "
         "needs root, or CAP_SYS_ADMIN and CAP_NET_ADMIN)",
         std::strerror(error));
  }
  holder_ = pid;
  keep_alive_ = keep_alive.write;
  fd_ = ::open(path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int open_error = errno;
    CloseIfOpen(keep_alive_);
    ::kill(pid, SIGKILL);
    WaitForPid(pid, nullptr);
    Fail(ErrorCode::kUnavailable, "{}: opening {}: {}", what, path(), std::strerror(open_error));
  }
}

NetworkNamespace::~NetworkNamespace() {
  CloseIfOpen(fd_);
  CloseIfOpen(keep_alive_);
  if (holder_ > 0) {
    ::kill(holder_, SIGKILL);
    WaitForPid(holder_, nullptr);
  }
}

std::string NetworkNamespace::path() const { return fmt::format("/proc/{}/ns/net", holder_); }

std::string FindProgram(const std::string& program) {
  std::vector<std::string> directories;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream entries(path);
    for (std::string entry; std::getline(entries, entry, ':');) {
      if (!entry.empty()) directories.push_back(entry);
    }
  }
  directories.emplace_back("/usr/sbin");
  directories.emplace_back("/sbin");
  for (const std::string& directory : directories) {
    std::string candidate = (std::filesystem::path(directory) / program).string();
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void RunInNamespace(int fd, const std::vector<std::string>& argv) {
  const std::string command = fmt::format("{}", fmt::join(argv, " "));
  const std::string program = FindProgram(argv.at(0));
  AD_CHECK(!program.empty(), kNotFound,
           "'{}' is not installed (Debian package iproute2); an emulated network needs it",
           argv[0]);
  // Built before fork: nothing may allocate after it.
  std::vector<std::string> strings = argv;
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  Pipe output = MakePipe(command);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (fd >= 0 && setns(fd, CLONE_NEWNET) != 0) _exit(126);
    if (dup2(output.write, STDOUT_FILENO) < 0 || dup2(output.write, STDERR_FILENO) < 0) _exit(126);
    execv(program.c_str(), pointers.data());
    _exit(127);
  }
  const int fork_error = errno;
  CloseIfOpen(output.write);
  if (pid < 0) {
    CloseIfOpen(output.read);
    Fail(ErrorCode::kUnavailable, "{}: fork: {}", command, std::strerror(fork_error));
  }
  const std::string printed = ReadToEnd(output.read);
  CloseIfOpen(output.read);
  int status = 0;
  WaitForPid(pid, &status);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string reason = printed;
  while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 126 && reason.empty()) {
    reason = "could not enter the network namespace";
  }
  Fail(ErrorCode::kFailedPrecondition, "'{}' failed: {}", command,
       reason.empty() ? fmt::format("exit status {}", status) : reason);
}

}  // namespace autodist::netemu
