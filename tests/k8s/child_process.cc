#include "tests/k8s/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "runtime/common/error.h"

extern char** environ;

namespace autodist::k8s {
namespace {

std::vector<std::string> BuildEnv(const LaunchSpec& spec, bool inherit_env) {
  std::map<std::string, std::string> merged;
  if (inherit_env) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const size_t eq = entry.find('=');
      if (eq != std::string::npos) merged[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
  }
  for (const auto& [name, value] : spec.env) merged[name] = value;
  std::vector<std::string> out;
  for (const auto& [name, value] : merged) out.push_back(name + "=" + value);
  return out;
}

bool Executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// argv[0] as execve needs it: a path. Done before fork, where allocating is still allowed.
std::string Resolve(const std::string& program, const std::vector<std::string>& env) {
  if (program.find('/') != std::string::npos) return program;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& entry : env) {
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > start ? path.substr(start, end - start) : ".";
    if (Executable(dir + "/" + program)) return dir + "/" + program;
    start = end + 1;
  }
  Fail(ErrorCode::kNotFound, "exec: \"{}\": executable file not found in $PATH", program);
}

// Everything between fork and exec is async-signal-safe: the agent is multi-threaded.
[[noreturn]] void ExecChild(const char* program, char* const* argv, char* const* envp,
                            const char* working_dir, int log_fd, int error_fd, pid_t agent) {
  ::setpgid(0, 0);
  // The container dies with the agent thread that started it, not after it as an orphan.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != agent) ::_exit(127);
  // Signal state survives exec: undo what the agent's process blocks (fake-apiserver blocks
  // SIGTERM for sigwait) or ignores (SIGPIPE), or SIGTERM would never reach the container.
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  ::dup2(log_fd, 1);
  ::dup2(log_fd, 2);
  // Only stdio and the error pipe (moved to 3) cross into the container: the agent's sockets
  // (the API server's listener) must not outlive it in a container.
  if (error_fd != 3) ::dup2(error_fd, 3);
  ::fcntl(3, F_SETFD, FD_CLOEXEC);
  ::close_range(4, ~0U, 0);
  error_fd = 3;
  int err = 0;
  if (working_dir[0] != '\0' && ::chdir(working_dir) != 0) {
    err = errno;
  } else {
    ::execve(program, argv, envp);
    err = errno;
  }
  // Tell the agent why (it reads errno from the close-on-exec pipe, which stays open on failure).
  [[maybe_unused]] const ssize_t n = ::write(error_fd, &err, sizeof(err));
  ::_exit(127);
}

ExitInfo Decode(int status) {
  ExitInfo info;
  if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
    info.exit_code = 128 + info.signal;
  } else {
    info.exit_code = WEXITSTATUS(status);
  }
  return info;
}

}  // namespace

ChildProcess ChildProcess::Start(const LaunchSpec& spec, const std::string& log_path,
                                 bool inherit_env) {
  AD_CHECK(!spec.argv.empty(), kInvalidArgument, "container '{}': empty command", spec.container);
  const std::vector<std::string> env = BuildEnv(spec, inherit_env);
  const std::string program = Resolve(spec.argv[0], env);
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  AD_CHECK(log_fd >= 0, kFailedPrecondition, "container '{}': cannot open log '{}': {}",
           spec.container, log_path, std::strerror(errno));
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    ::close(log_fd);
    Fail(ErrorCode::kFailedPrecondition, "container '{}': pipe: {}", spec.container,
         std::strerror(errno));
  }
  const pid_t agent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(error_pipe[0]);
    ExecChild(program.c_str(), argv.data(), envp.data(), spec.working_dir.c_str(), log_fd,
              error_pipe[1], agent);
  }
  ::close(error_pipe[1]);
  ::close(log_fd);
  if (pid < 0) {
    ::close(error_pipe[0]);
    Fail(ErrorCode::kFailedPrecondition, "container '{}': fork: {}", spec.container,
         std::strerror(errno));
  }
  ::setpgid(pid, pid);  // also here, so a signal sent right after Start reaches the group
  ChildProcess child(pid);
  int err = 0;
  ssize_t n;
  do {
    n = ::read(error_pipe[0], &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof(err))) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    child.exit_ = Decode(status);
    if (!spec.working_dir.empty() && ::access(spec.working_dir.c_str(), F_OK) != 0) {
      Fail(ErrorCode::kNotFound, "chdir to cwd (\"{}\") set in config.json failed: {}",
           spec.working_dir, std::strerror(err));
    }
    Fail(ErrorCode::kFailedPrecondition, "exec: \"{}\": {}", spec.argv[0], std::strerror(err));
  }
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), exit_(std::move(other.exit_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    KillAndReap();
    pid_ = std::exchange(other.pid_, -1);
    exit_ = std::move(other.exit_);
  }
  return *this;
}

ChildProcess::~ChildProcess() { KillAndReap(); }

void ChildProcess::KillAndReap() {
  if (!running()) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exit_ = Decode(status);
}

std::optional<ExitInfo> ChildProcess::Poll() {
  if (exit_ || pid_ <= 0) return exit_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r != pid_) return std::nullopt;
  exit_ = Decode(status);
  // The rest of the group (a shell's background jobs) goes with the main process.
  ::kill(-pid_, SIGKILL);
  return exit_;
}

void ChildProcess::Signal(int signal) {
  if (running()) ::kill(-pid_, signal);
}

}  // namespace autodist::k8s
