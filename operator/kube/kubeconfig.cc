// LoadKubeconfig and LoadDefaultConfig: the kubeconfig subset client-go's clientcmd resolves for
// one context (server, CA, TLS verification, token, token file, client certificate, namespace).
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <vector>

#include "operator/kube/config.h"
#include "runtime/common/base64.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

extern char** environ;

namespace autodist::kube {
namespace {

// One kubeconfig being read: its path (for messages and relative paths) and the parsed tree.
class Kubeconfig {
 public:
  Kubeconfig(std::string path, const YAML::Node& root) : path_(std::move(path)), root_(root) {}

  [[noreturn]] void Bad(const std::string& field, const std::string& problem) const {
    Fail(ErrorCode::kInvalidArgument, "kubeconfig '{}': {}: {}", path_, field, problem);
  }

  // The `name`d entry of the named list `list` (clusters, users, contexts): its inner map
  // (`inner`: cluster, user, context). Names the entries there are when `name` is not one.
  YAML::Node Entry(const std::string& list, const std::string& inner,
                   const std::string& name) const {
    const YAML::Node entries = root_[list];
    std::vector<std::string> names;
    if (entries && !entries.IsSequence()) Bad(list, "expected a list");
    for (size_t i = 0; entries && i < entries.size(); ++i) {
      const std::string entry_name =
          Scalar(entries[i], "name", list + "[" + std::to_string(i) + "]");
      if (entry_name == name) {
        const YAML::Node body = entries[i][inner];
        const std::string field = Field(list, name, inner);
        if (body && !body.IsMap()) Bad(field, "expected a map");
        return body ? body : YAML::Node(YAML::NodeType::Map);
      }
      names.push_back(entry_name);
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    Bad(list, "no entry named '" + name + "' (entries: " + (known.empty() ? "none" : known) + ")");
  }

  // A string field of `node`; "" when absent.
  std::string Scalar(const YAML::Node& node, const std::string& key,
                     const std::string& where) const {
    const YAML::Node value = node[key];
    if (!value || value.IsNull()) return "";
    if (!value.IsScalar()) Bad(where + "." + key, "expected a string");
    return value.as<std::string>();
  }

  bool Bool(const YAML::Node& node, const std::string& key, const std::string& where) const {
    const YAML::Node value = node[key];
    if (!value || value.IsNull()) return false;
    bool result = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, result)) {
      Bad(where + "." + key, "expected true or false, got '" + Dump(value) + "'");
    }
    return result;
  }

  // The bytes of `key`-data (base64) or of the file `key` names; "" when neither is set.
  // Inline data wins over a file, as in kubectl.
  std::string FileOrData(const YAML::Node& node, const std::string& key,
                         const std::string& where) const {
    const std::string data = Scalar(node, key + "-data", where);
    if (!data.empty()) {
      auto decoded = DecodeBase64(data, Base64Whitespace::kSkip);
      if (!decoded) Bad(where + "." + key + "-data", "not valid base64");
      return *decoded;
    }
    const std::string file = Scalar(node, key, where);
    if (file.empty()) return "";
    return ReadFileBytes(Resolve(file), "kubeconfig '" + path_ + "': " + where + "." + key);
  }

  // kubectl resolves relative paths in a kubeconfig against the file's directory.
  std::string Resolve(const std::string& file) const {
    const std::filesystem::path p(file);
    if (p.is_absolute()) return file;
    return (std::filesystem::path(path_).parent_path() / p).lexically_normal().string();
  }

  static std::string Field(const std::string& list, const std::string& name,
                           const std::string& inner) {
    return list + "['" + name + "']." + inner;
  }

  const YAML::Node& root() const { return root_; }
  const std::string& path() const { return path_; }

 private:
  static std::string Dump(const YAML::Node& node) {
    std::ostringstream out;
    out << node;
    return out.str();
  }

  std::string path_;
  YAML::Node root_;
};

void ReadCluster(const Kubeconfig& kc, const std::string& name, Config& config) {
  const YAML::Node cluster = kc.Entry("clusters", "cluster", name);
  const std::string where = Kubeconfig::Field("clusters", name, "cluster");
  config.server = kc.Scalar(cluster, "server", where);
  if (config.server.empty()) kc.Bad(where + ".server", "required (the API server's URL)");
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    kc.Bad(where + ".server", "expected an http:// or https:// URL, got '" + config.server + "'");
  }
  while (config.server.ends_with('/')) config.server.pop_back();
  config.insecure_skip_tls_verify = kc.Bool(cluster, "insecure-skip-tls-verify", where);
  config.ca_pem = kc.FileOrData(cluster, "certificate-authority", where);
}

// users[].user.exec, as client-go reads it (k8s.io/client-go/tools/clientcmd/api ExecConfig).
ExecPlugin ReadExec(const Kubeconfig& kc, const YAML::Node& exec, const std::string& user_where,
                    const Config& cluster) {
  const std::string where = user_where + ".exec";
  if (!exec.IsMap()) kc.Bad(where, "expected a map");
  ExecPlugin plugin;
  plugin.where = "kubeconfig '" + kc.path() + "': " + where;
  plugin.api_version = kc.Scalar(exec, "apiVersion", where);
  if (plugin.api_version != "client.authentication.k8s.io/v1" &&
      plugin.api_version != "client.authentication.k8s.io/v1beta1") {
    kc.Bad(where + ".apiVersion", "expected client.authentication.k8s.io/v1 or /v1beta1, got '" +
                                      plugin.api_version + "'");
  }
  plugin.command = kc.Scalar(exec, "command", where);
  if (plugin.command.empty()) kc.Bad(where + ".command", "required (the plugin to run)");
  // A command with a path resolves against the kubeconfig's directory; a bare name, on PATH.
  if (plugin.command.find('/') != std::string::npos) plugin.command = kc.Resolve(plugin.command);
  if (const YAML::Node args = exec["args"]) {
    if (!args.IsSequence()) kc.Bad(where + ".args", "expected a list of strings");
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].IsScalar())
        kc.Bad(where + ".args[" + std::to_string(i) + "]", "expected a string");
      plugin.args.push_back(args[i].as<std::string>());
    }
  }
  if (const YAML::Node env = exec["env"]) {
    if (!env.IsSequence()) kc.Bad(where + ".env", "expected a list of {name, value}");
    for (size_t i = 0; i < env.size(); ++i) {
      const std::string entry = where + ".env[" + std::to_string(i) + "]";
      if (!env[i].IsMap()) kc.Bad(entry, "expected {name, value}");
      const std::string name = kc.Scalar(env[i], "name", entry);
      if (name.empty()) kc.Bad(entry + ".name", "required");
      plugin.env.emplace_back(name, kc.Scalar(env[i], "value", entry));
    }
  }
  // The operator runs with no terminal: a plugin that must ask someone cannot work.
  const std::string interactive = kc.Scalar(exec, "interactiveMode", where);
  if (interactive == "Always") {
    kc.Bad(where + ".interactiveMode",
           "Always needs a terminal the operator does not have; use a plugin that works with "
           "Never or IfAvailable");
  }
  if (!interactive.empty() && interactive != "Never" && interactive != "IfAvailable") {
    kc.Bad(where + ".interactiveMode",
           "expected Never, IfAvailable or Always, got '" + interactive + "'");
  }
  if (kc.Bool(exec, "provideClusterInfo", where)) {
    plugin.cluster = {{"server", cluster.server},
                      {"insecure-skip-tls-verify", cluster.insecure_skip_tls_verify}};
    if (!cluster.ca_pem.empty()) {
      plugin.cluster["certificate-authority-data"] = EncodeBase64(cluster.ca_pem);
    }
  }
  return plugin;
}

void ReadUser(const Kubeconfig& kc, const std::string& name, Config& config) {
  const YAML::Node user = kc.Entry("users", "user", name);
  const std::string where = Kubeconfig::Field("users", name, "user");
  for (const char* unsupported : {"auth-provider", "username", "password"}) {
    if (user[unsupported]) {
      kc.Bad(where + "." + unsupported,
             "not supported by autodist; use token, tokenFile, exec or "
             "client-certificate/client-key");
    }
  }
  if (const YAML::Node exec = user["exec"]) config.exec = ReadExec(kc, exec, where, config);
  config.token = kc.Scalar(user, "token", where);
  const std::string token_file = kc.Scalar(user, "tokenFile", where);
  if (config.token.empty() && !token_file.empty()) {
    config.token_file = kc.Resolve(token_file);
    // Read once now so a missing file fails at load time, not at the first request.
    ReadFileBytes(config.token_file, "kubeconfig '" + kc.path() + "': " + where + ".tokenFile");
  }
  config.client_cert_pem = kc.FileOrData(user, "client-certificate", where);
  config.client_key_pem = kc.FileOrData(user, "client-key", where);
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    kc.Bad(where, "client-certificate and client-key must be given together");
  }
}

}  // namespace

Config LoadKubeconfig(const std::string& path, const std::string& context) {
  const std::string text = ReadFileBytes(path, "kubeconfig");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Fail(ErrorCode::kInvalidArgument, "kubeconfig '{}': not valid YAML: {}", path, e.what());
  }
  AD_CHECK(root.IsMap(), kInvalidArgument, "kubeconfig '{}': expected a YAML map (kind: Config)",
           path);
  const Kubeconfig kc(path, root);
  Config config;
  try {
    std::string name = context;
    if (name.empty()) name = kc.Scalar(root, "current-context", "kubeconfig");
    if (name.empty()) kc.Bad("current-context", "not set, and no context was asked for");
    const YAML::Node ctx = kc.Entry("contexts", "context", name);
    const std::string where = Kubeconfig::Field("contexts", name, "context");
    const std::string cluster = kc.Scalar(ctx, "cluster", where);
    if (cluster.empty()) kc.Bad(where + ".cluster", "required (the name of a cluster entry)");
    ReadCluster(kc, cluster, config);
    const std::string user = kc.Scalar(ctx, "user", where);
    if (!user.empty()) ReadUser(kc, user, config);
    const std::string ns = kc.Scalar(ctx, "namespace", where);
    if (!ns.empty()) config.ns = ns;
    config.source = "kubeconfig '" + path + "' context '" + name + "'";
  } catch (const YAML::Exception& e) {
    // Conversions of odd node types; our own checks above name the field.
    Fail(ErrorCode::kInvalidArgument, "kubeconfig '{}': {}", path, e.what());
  }
  return config;
}

namespace {

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

}  // namespace

Config LoadDefaultConfig(const std::string& kubeconfig, const std::string& context) {
  if (!kubeconfig.empty()) return LoadKubeconfig(kubeconfig, context);
  const auto env = ProcessEnvironment();
  if (auto it = env.find("KUBECONFIG"); it != env.end() && !it->second.empty()) {
    // Merging several files, as kubectl does, is not supported: the first that exists is used.
    std::stringstream list(it->second);
    std::string file;
    while (std::getline(list, file, ':')) {
      if (!file.empty() && std::filesystem::exists(file)) return LoadKubeconfig(file, context);
    }
    Fail(ErrorCode::kNotFound, "KUBECONFIG='{}': none of its files exists", it->second);
  }
  if (auto it = env.find("KUBERNETES_SERVICE_HOST"); it != env.end() && !it->second.empty()) {
    return LoadInCluster(env);
  }
  auto home = env.find("HOME");
  AD_CHECK(home != env.end(), kNotFound,
           "no Kubernetes config: KUBECONFIG, KUBERNETES_SERVICE_HOST and HOME are all unset");
  return LoadKubeconfig(home->second + "/.kube/config", context);
}

}  // namespace autodist::kube
