// Where the API server is and how to authenticate to it, loaded from a kubeconfig file or from
// the pod's service account. Loading validates everything once, so the client never meets a
// half-filled config; errors name the file and the field.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "operator/kube/exec_credential.h"

namespace autodist::kube {

struct Config {
  std::string server;  // "https://host:port", no trailing slash
  // PEM bundle of the CA that signs the server's certificate; empty: the system's roots.
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
  // Bearer token. With token_file set the client re-reads that file now and then instead,
  // because projected service-account tokens are rotated while the pod runs.
  std::string token;
  std::string token_file;
  // A kubeconfig `exec` credential plugin, run for a token when none is held or it expired, and
  // again after a 401.
  std::optional<ExecPlugin> exec;
  // Client-certificate authentication (both or neither).
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string ns = "default";  // the context's (or the service account's) namespace
  // For messages: "kubeconfig '/home/u/.kube/config' context 'kind'" or "in-cluster config".
  std::string source;
};

// Reads a kubeconfig file: `context` (or current-context when empty) selects the cluster and
// user. Relative file paths inside resolve against the file's directory, as kubectl does.
// Throws autodist::Error (kNotFound for a missing file, kInvalidArgument for a bad field).
Config LoadKubeconfig(const std::string& path, const std::string& context = "");

// The in-cluster config: the service account's token, ca.crt and namespace under `root`, the
// server from KUBERNETES_SERVICE_HOST/PORT (passed in `env`; tests pass their own).
inline constexpr const char* kServiceAccountRoot = "/var/run/secrets/kubernetes.io/serviceaccount";
Config LoadInCluster(const std::map<std::string, std::string>& env,
                     const std::string& root = kServiceAccountRoot);

// The edge function the binaries call: `kubeconfig` when given, else $KUBECONFIG (the first
// file of the list that exists), else the in-cluster config when KUBERNETES_SERVICE_HOST is set,
// else ~/.kube/config — controller-runtime's order.
Config LoadDefaultConfig(const std::string& kubeconfig = "", const std::string& context = "");

}  // namespace autodist::kube
