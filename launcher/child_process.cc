#include "launcher/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>

#include "launcher/live_process_groups.h"
#include "runtime/common/error.h"
#include "runtime/common/posix_process.h"

extern char** environ;  // NOLINT: POSIX declares it nowhere in a header

namespace autodist::launcher {
namespace {

// What a child reports through its status pipe when it cannot exec; an exec that succeeds closes
// the pipe (close-on-exec) without writing, which is how Start learns the program is running.
enum class SetupStage : int { kProcessGroup, kDeathSignal, kNetworkNamespace, kRedirect, kExec };

struct SetupFailure {
  SetupStage stage;
  int error;
};

const char* StageName(SetupStage stage) {
  switch (stage) {
    case SetupStage::kProcessGroup:
      return "setpgid";
    case SetupStage::kDeathSignal:
      return "prctl(PR_SET_PDEATHSIG)";
    case SetupStage::kNetworkNamespace:
      return "setns(CLONE_NEWNET)";
    case SetupStage::kRedirect:
      return "redirecting stdin/stdout/stderr";
    case SetupStage::kExec:
      return "execve";
  }
  return "setup";
}

// The launcher's environment with `overrides` replacing or adding variables, as "KEY=VALUE".
std::vector<std::string> MergedEnvironment(const std::string& name,
                                           const std::map<std::string, std::string>& overrides) {
  for (const auto& [key, value] : overrides) {
    AD_CHECK(!key.empty() && key.find('=') == std::string::npos, kInvalidArgument,
             "process '{}': environment variable name '{}' is invalid (empty or contains '=')",
             name, key);
  }
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string key(text.substr(0, text.find('=')));
    if (!overrides.contains(key)) entries.emplace_back(text);
  }
  for (const auto& [key, value] : overrides)
    entries.push_back(std::string(key).append("=").append(value));
  return entries;
}

std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Everything the child does between fork and exec. Only async-signal-safe calls: the launcher has
// other threads, whose locks may be held forever in the child.
// `output_fd` -1: stdout and stderr stay as they are. `network` -1: the launcher's namespace.
[[noreturn]] void RunChild(pid_t launcher, int stdin_fd, int output_fd, int status_fd, int network,
                           const char* path, char* const* argv, char* const* envp) {
  const auto fail = [status_fd](SetupStage stage) {
    const SetupFailure failure{stage, errno};
    [[maybe_unused]] const ssize_t written = write(status_fd, &failure, sizeof failure);
    _exit(127);
  };
  if (setpgid(0, 0) != 0) fail(SetupStage::kProcessGroup);
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) fail(SetupStage::kDeathSignal);
  // The launcher may have died before prctl took effect; then no signal would ever come.
  if (getppid() != launcher) _exit(127);
  if (network >= 0 && setns(network, CLONE_NEWNET) != 0) fail(SetupStage::kNetworkNamespace);

  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  // Ignored signals survive exec (gRPC ignores SIGPIPE, for one); the child starts clean. The
  // calls for SIGKILL, SIGSTOP and the C library's reserved signals fail, harmlessly.
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    sigaction(signal_number, &default_action, nullptr);
  }

  if (dup2(stdin_fd, STDIN_FILENO) < 0 ||
      (output_fd >= 0 &&
       (dup2(output_fd, STDOUT_FILENO) < 0 || dup2(output_fd, STDERR_FILENO) < 0))) {
    fail(SetupStage::kRedirect);
  }
  // Descriptors that other code opened without close-on-exec are none of the child's business.
  // On kernels without close_range this fails and they leak, which is harmless.
  close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  execve(path, argv, envp);
  fail(SetupStage::kExec);
  _exit(127);  // not reached: fail() exits
}

[[noreturn]] void ThrowStartFailure(const std::string& name, const std::string& path,
                                    const SetupFailure& failure) {
  const char* reason = std::strerror(failure.error);
  if (failure.stage != SetupStage::kExec) {
    Fail(ErrorCode::kInternal, "cannot start process '{}': {} failed in the child: {}", name,
         StageName(failure.stage), reason);
  }
  switch (failure.error) {
    case ENOENT:
    case ENOTDIR:
      Fail(ErrorCode::kNotFound, "cannot start process '{}': executable '{}' does not exist", name,
           path);
    case EACCES:
    case EISDIR:
    case ENOEXEC:
    case EPERM:
      Fail(ErrorCode::kInvalidArgument,
           "cannot start process '{}': '{}' is not an executable file ({})", name, path, reason);
    default:
      Fail(ErrorCode::kFailedPrecondition, "cannot start process '{}': executing '{}' failed: {}",
           name, path, reason);
  }
}

// Waits for the child to exec or to report why it could not; nullopt when the exec succeeded.
std::optional<SetupFailure> ReadSetupFailure(int status_fd) {
  SetupFailure failure{};
  size_t received = 0;
  while (received < sizeof failure) {
    const ssize_t n =
        read(status_fd, reinterpret_cast<char*>(&failure) + received, sizeof failure - received);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received += static_cast<size_t>(n);
  }
  if (received < sizeof failure) return std::nullopt;
  return failure;
}

}  // namespace

int ShellExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

SpawnedChild SpawnChild(const ProcessSpec& spec) {
  // Everything the child needs is built before fork (no allocation is safe after it).
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = MergedEnvironment(spec.name, spec.env);
  const std::vector<char*> argv = NullTerminated(argv_strings);
  const std::vector<char*> envp = NullTerminated(env_strings);
  const std::string& path = spec.argv[0];

  Pipe output =
      spec.share_output ? Pipe{} : MakePipe(fmt::format("cannot start process '{}'", spec.name));
  Pipe status;
  int stdin_fd = -1;
  try {
    status = MakePipe(fmt::format("cannot start process '{}'", spec.name));
    stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    AD_CHECK(stdin_fd >= 0, kUnavailable, "cannot start process '{}': opening /dev/null: {}",
             spec.name, std::strerror(errno));
  } catch (const Error&) {
    for (int* fd : {&output.read, &output.write, &status.read, &status.write}) CloseIfOpen(*fd);
    throw;
  }

  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    RunChild(launcher, stdin_fd, output.write, status.write, spec.network_namespace, path.c_str(),
             argv.data(), envp.data());
  }
  const int fork_error = errno;
  CloseIfOpen(output.write);
  CloseIfOpen(status.write);
  CloseIfOpen(stdin_fd);
  if (pid < 0) {
    CloseIfOpen(output.read);
    CloseIfOpen(status.read);
    Fail(ErrorCode::kUnavailable, "cannot start process '{}': fork: {}", spec.name,
         std::strerror(fork_error));
  }

  const std::optional<SetupFailure> failure = ReadSetupFailure(status.read);
  CloseIfOpen(status.read);
  if (failure) {
    WaitForPid(pid, nullptr);
    CloseIfOpen(output.read);
    ThrowStartFailure(spec.name, path, *failure);
  }
  try {
    detail::RegisterLiveProcessGroup(pid);
  } catch (const Error&) {
    kill(-pid, SIGKILL);
    WaitForPid(pid, nullptr);
    CloseIfOpen(output.read);
    throw;
  }
  if (output.read >= 0) fcntl(output.read, F_SETFL, O_NONBLOCK);

  return {pid, output.read};
}

}  // namespace autodist::launcher
