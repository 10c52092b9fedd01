#include "tests/k8s/test_api_server.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/k8s/api_error.h"
#include "tests/k8s/rest.h"
#include "tests/k8s/yaml_json.h"

namespace autodist::k8s {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  AD_CHECK(in.good(), kNotFound, "manifest '{}': cannot open", path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string KubeconfigFor(const std::string& url) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: fake\n"
         "  cluster:\n"
         "    server: " +
         url +
         "\n"
         "contexts:\n"
         "- name: fake\n"
         "  context:\n"
         "    cluster: fake\n"
         "    user: fake\n"
         "    namespace: default\n"
         "current-context: fake\n"
         "users:\n"
         "- name: fake\n"
         "  user: {}\n";
}

std::string AutoDistJobCrdPath() {
  return AUTODIST_SOURCE_DIR "/crds/autodistjobs.autodist.io.yaml";
}

std::string PodGroupCrdPath() {
  return AUTODIST_SOURCE_DIR "/tests/k8s/fixtures/podgroups.scheduling.x-k8s.io.yaml";
}

std::string VolcanoPodGroupCrdPath() {
  return AUTODIST_SOURCE_DIR "/tests/k8s/fixtures/podgroups.scheduling.volcano.sh.yaml";
}

TestApiServer::TestApiServer(TestApiServerOptions options) {
  std::string pattern = (std::filesystem::temp_directory_path() / "k8s-double-XXXXXX").string();
  AD_CHECK(::mkdtemp(pattern.data()) != nullptr, kFailedPrecondition,
           "test API server: cannot create a directory under {}",
           std::filesystem::temp_directory_path().string());
  dir_ = pattern;
  api_ = std::make_unique<ApiServer>(options.api);
  http_ = std::make_unique<HttpServer>(*api_, "127.0.0.1", 0);
  kubeconfig_path_ = dir_ + "/kubeconfig";
  std::ofstream(kubeconfig_path_) << KubeconfigFor(url());
  if (options.node_agent) {
    options.agent.api_port = port();
    agent_options_ = options.agent;
    agent_ = std::make_unique<NodeAgent>(*api_, options.agent);
  }
}

TestApiServer::~TestApiServer() {
  agent_.reset();
  http_.reset();
  api_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void TestApiServer::LoseNode(const std::string& replacement) {
  AD_CHECK(agent_ != nullptr, kFailedPrecondition, "LoseNode: the server runs no node agent");
  agent_.reset();
  agent_options_.node_name = replacement;
  agent_ = std::make_unique<NodeAgent>(*api_, agent_options_);
}

nlohmann::json TestApiServer::Create(const nlohmann::json& object) {
  const std::string api_version = object.value("apiVersion", "");
  const std::string kind = object.value("kind", "");
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version = api_version.substr(slash == std::string::npos ? 0 : slash + 1);
  for (const auto& r : store().Resources()) {
    if (r.group != group || r.version != version || r.kind != kind) continue;
    std::string ns;
    if (r.namespaced) {
      const auto& meta = object.value("metadata", nlohmann::json::object());
      ns = meta.value("namespace", "default");
    }
    WriteOptions write;
    write.field_validation = FieldValidation::kStrict;
    return Rest(store()).Create(r, ns, object, write)->object;
  }
  FailApi(404, "NotFound", "the server doesn't have a resource type for kind {} in {}", kind,
          api_version);
}

std::vector<nlohmann::json> TestApiServer::CreateFromFile(const std::string& path) {
  std::vector<nlohmann::json> created;
  for (const auto& doc : ParseYamlDocuments(ReadText(path))) created.push_back(Create(doc));
  return created;
}

}  // namespace autodist::k8s
