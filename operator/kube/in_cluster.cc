// LoadInCluster: the config a pod gets from its service account (what client-go's
// rest.InClusterConfig reads).
#include <filesystem>

#include "operator/kube/config.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::kube {
namespace {

std::string Get(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

}  // namespace

Config LoadInCluster(const std::map<std::string, std::string>& env, const std::string& root) {
  const std::string host = Get(env, "KUBERNETES_SERVICE_HOST");
  const std::string port = Get(env, "KUBERNETES_SERVICE_PORT");
  AD_CHECK(!host.empty() && !port.empty(), kFailedPrecondition,
           "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set "
           "(is this running in a pod?)");
  Config config;
  config.source = "in-cluster config";
  // An IPv6 service address needs brackets in a URL.
  const bool ipv6 = host.find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  config.token_file = root + "/token";
  const std::string token =
      Trim(ReadFileBytes(config.token_file, "in-cluster service-account token"));
  AD_CHECK(!token.empty(), kInvalidArgument, "in-cluster config: token file '{}' is empty",
           config.token_file);
  config.ca_pem = ReadFileBytes(root + "/ca.crt", "in-cluster service-account CA");
  const std::string ns_file = root + "/namespace";
  if (std::filesystem::exists(ns_file)) {
    const std::string ns = Trim(ReadFileBytes(ns_file, "in-cluster namespace"));
    if (!ns.empty()) config.ns = ns;
  }
  return config;
}

}  // namespace autodist::kube
