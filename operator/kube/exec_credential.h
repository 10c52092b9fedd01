// kubeconfig `exec` credential plugins (client.authentication.k8s.io), as kubectl runs them:
// the command with its args, the process's environment plus the plugin's `env` and
// KUBERNETES_EXEC_INFO (an ExecCredential with spec.interactive false, and spec.cluster when
// provideClusterInfo is set), no stdin, stderr passed through; stdout is an ExecCredential whose
// status.token authenticates the requests until status.expirationTimestamp. This is how EKS
// (aws eks get-token), GKE (gke-gcloud-auth-plugin) and AKS (kubelogin) clusters are reached.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace autodist::kube {

struct ExecPlugin {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  nlohmann::json cluster;  // spec.cluster for KUBERNETES_EXEC_INFO; null: not provided
  std::string where;       // "kubeconfig '/home/u/.kube/config': users[eks].user.exec"
};

struct ExecToken {
  std::string token;
  // When the token stops being valid; nullopt: until the server refuses it (401).
  std::optional<std::chrono::system_clock::time_point> expiry;
};

// The ExecCredential a plugin printed. Throws autodist::Error (kInvalidArgument) naming the
// plugin for output that is not one, of another apiVersion, without status.token (client
// certificates from plugins are not supported) or with a bad expirationTimestamp.
ExecToken ParseExecCredential(const std::string& output, const ExecPlugin& plugin);

// Runs the plugin and parses what it printed. Throws autodist::Error: kUnavailable when the
// command cannot be started, exits non-zero (its stderr is the user's to read) or outlasts
// `timeout` (it is killed), kInvalidArgument for bad output.
ExecToken RunExecPlugin(const ExecPlugin& plugin,
                        std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace autodist::kube
