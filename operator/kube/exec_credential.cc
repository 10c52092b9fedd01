#include "operator/kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>

#include "runtime/common/error.h"
#include "runtime/common/rfc3339.h"

namespace autodist::kube {
namespace {

// The process's environment with `extra` over it, as execve wants it.
std::vector<std::string> Environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const size_t eq = text.find('=');
    if (eq != std::string::npos) merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& [name, value] : extra) merged[name] = value;
  std::vector<std::string> out;
  out.reserve(merged.size());
  for (const auto& [name, value] : merged) {
    std::string entry = name;
    entry += '=';
    entry += value;
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

ExecToken ParseExecCredential(const std::string& output, const ExecPlugin& plugin) {
  const nlohmann::json credential = nlohmann::json::parse(output, nullptr, false);
  AD_CHECK(credential.is_object(), kInvalidArgument, "{}: '{}' printed no ExecCredential JSON: {}",
           plugin.where, plugin.command, output.substr(0, 200));
  AD_CHECK(credential.value("kind", "") == "ExecCredential", kInvalidArgument,
           "{}: '{}' printed kind '{}', expected ExecCredential", plugin.where, plugin.command,
           credential.value("kind", ""));
  AD_CHECK(credential.value("apiVersion", "") == plugin.api_version, kInvalidArgument,
           "{}: '{}' printed apiVersion '{}', expected '{}' as the kubeconfig asks", plugin.where,
           plugin.command, credential.value("apiVersion", ""), plugin.api_version);
  const nlohmann::json status = credential.value("status", nlohmann::json::object());
  AD_CHECK(status.is_object(), kInvalidArgument,
           "{}: '{}' printed an ExecCredential without status", plugin.where, plugin.command);
  ExecToken out;
  out.token = status.value("token", "");
  if (out.token.empty()) {
    AD_CHECK(!status.contains("clientCertificateData"), kInvalidArgument,
             "{}: '{}' answers with a client certificate; autodist supports plugins that give a "
             "token",
             plugin.where, plugin.command);
    Fail(ErrorCode::kInvalidArgument, "{}: '{}' printed an ExecCredential without status.token",
         plugin.where, plugin.command);
  }
  const std::string expiry = status.value("expirationTimestamp", "");
  if (!expiry.empty()) {
    out.expiry = ParseRfc3339(expiry);
    AD_CHECK(out.expiry.has_value(), kInvalidArgument,
             "{}: '{}' printed status.expirationTimestamp '{}', expected RFC 3339", plugin.where,
             plugin.command, expiry);
  }
  return out;
}

ExecToken RunExecPlugin(const ExecPlugin& plugin, std::chrono::milliseconds timeout) {
  nlohmann::json info = {{"apiVersion", plugin.api_version},
                         {"kind", "ExecCredential"},
                         {"spec", {{"interactive", false}}}};
  if (!plugin.cluster.is_null()) info["spec"]["cluster"] = plugin.cluster;
  std::vector<std::pair<std::string, std::string>> extra = plugin.env;
  extra.emplace_back("KUBERNETES_EXEC_INFO", info.dump());
  std::vector<std::string> env = Environment(extra);
  std::vector<std::string> argv = {plugin.command};
  argv.insert(argv.end(), plugin.args.begin(), plugin.args.end());
  std::vector<char*> argv_pointers = Pointers(argv);
  std::vector<char*> env_pointers = Pointers(env);

  std::array<int, 2> out{};
  AD_CHECK(pipe2(out.data(), O_CLOEXEC) == 0, kUnavailable, "{}: pipe: {}", plugin.where,
           std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, plugin.command.c_str(), &actions, nullptr,
                                   argv_pointers.data(), env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (spawned != 0) {
    close(out[0]);
    Fail(ErrorCode::kUnavailable, "{}: cannot run '{}': {}", plugin.where, plugin.command,
         std::strerror(spawned));
  }
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd readable{out[0], POLLIN, 0};
    const int ready = poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    std::array<char, 4096> buffer{};
    const ssize_t got = read(out[0], buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(buffer.data(), static_cast<size_t>(got));
  }
  close(out[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  AD_CHECK(!timed_out, kUnavailable, "{}: '{}' did not finish within {} s; killed", plugin.where,
           plugin.command, timeout.count() / 1000);
  AD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, kUnavailable,
           "{}: '{}' failed ({}); its error output says why", plugin.where, plugin.command,
           WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                             : "killed by signal " + std::to_string(WTERMSIG(status)));
  return ParseExecCredential(output, plugin);
}

}  // namespace autodist::kube
