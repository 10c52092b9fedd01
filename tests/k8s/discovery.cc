#include "tests/k8s/discovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace autodist::k8s {
namespace {

const nlohmann::json kVerbs = {"create", "delete", "deletecollection", "get",
                               "list",   "patch",  "update",           "watch"};

std::string GroupVersion(const std::string& group, const std::string& version) {
  return group.empty() ? version : group + "/" + version;
}

std::string GvPath(const std::string& group, const std::string& version) {
  return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}

// Served versions of `group`, best first.
std::vector<std::string> Versions(const std::vector<ResourceInfo>& resources,
                                  const std::string& group) {
  std::set<std::string> set;
  for (const auto& r : resources) {
    if (r.group == group) set.insert(r.version);
  }
  std::vector<std::string> out(set.begin(), set.end());
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return VersionPriorityLess(b, a); });
  return out;
}

std::vector<std::string> Groups(const std::vector<ResourceInfo>& resources) {
  std::vector<std::string> out;
  for (const auto& r : resources) {
    if (!r.group.empty() && std::find(out.begin(), out.end(), r.group) == out.end()) {
      out.push_back(r.group);
    }
  }
  return out;
}

nlohmann::json LegacyGroupEntry(const std::vector<ResourceInfo>& resources,
                                const std::string& group) {
  nlohmann::json versions = nlohmann::json::array();
  for (const auto& v : Versions(resources, group)) {
    versions.push_back({{"groupVersion", GroupVersion(group, v)}, {"version", v}});
  }
  return {{"name", group}, {"versions", versions}, {"preferredVersion", versions[0]}};
}

nlohmann::json AggregatedResource(const ResourceInfo& r) {
  const nlohmann::json kind = {{"group", r.group}, {"version", r.version}, {"kind", r.kind}};
  nlohmann::json out = {{"resource", r.plural},
                        {"responseKind", kind},
                        {"scope", r.namespaced ? "Namespaced" : "Cluster"},
                        {"singularResource", r.singular},
                        {"verbs", kVerbs}};
  if (!r.short_names.empty()) out["shortNames"] = r.short_names;
  if (!r.categories.empty()) out["categories"] = r.categories;
  if (r.has_status) {
    out["subresources"] = {
        {{"subresource", "status"}, {"responseKind", kind}, {"verbs", {"get", "patch", "update"}}}};
  }
  return out;
}

// The OpenAPI operation kubectl inspects: a PATCH tagged with the kind that lists the
// fieldValidation query parameter.
nlohmann::json Operation(const ResourceInfo& r, const std::string& action, bool with_body) {
  nlohmann::json op = {{"operationId", action + r.kind},
                       {"x-kubernetes-action", action},
                       {"x-kubernetes-group-version-kind",
                        {{"group", r.group}, {"version", r.version}, {"kind", r.kind}}},
                       {"responses", {{"200", {{"description", "OK"}}}}}};
  if (action == "patch" || action == "put" || action == "post") {
    op["parameters"] = nlohmann::json::array();
    for (const char* name : {"dryRun", "fieldManager", "fieldValidation"}) {
      op["parameters"].push_back({{"name", name},
                                  {"in", "query"},
                                  {"schema", {{"type", "string"}}},
                                  {"uniqueItems", true}});
    }
  }
  if (with_body && r.is_custom) {
    nlohmann::json content = nlohmann::json::object();
    for (const char* type : {"application/json-patch+json", "application/merge-patch+json",
                             "application/apply-patch+yaml"}) {
      content[type] = {{"schema", {{"type", "object"}}}};
    }
    op["requestBody"] = {{"content", content}, {"required", true}};
  }
  return op;
}

// "io.autodist.v1alpha1.AutoDistJob": the component name the real server gives a CRD's schema.
std::string ComponentName(const ResourceInfo& r) {
  std::string reversed;
  size_t end = r.group.size();
  while (true) {
    const size_t dot = r.group.rfind('.', end == 0 ? 0 : end - 1);
    const size_t start = dot == std::string::npos ? 0 : dot + 1;
    reversed += (reversed.empty() ? "" : ".") + r.group.substr(start, end - start);
    if (dot == std::string::npos) break;
    end = dot;
  }
  return fmt::format("{}.{}.{}", reversed, r.version, r.kind);
}

std::string Hash(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a: a content hash for client-side caching
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return fmt::format("{:016X}", h);
}

}  // namespace

bool VersionPriorityLess(const std::string& a, const std::string& b) {
  static const std::regex kKube("^v([0-9]+)(?:(alpha|beta)([0-9]+))?$");
  auto rank = [](const std::string& v) {
    std::smatch m;
    if (!std::regex_match(v, m, kKube)) return std::tuple<int, long, long>{0, 0, 0};
    const int stability = !m[2].matched ? 3 : m[2] == "beta" ? 2 : 1;
    return std::tuple<int, long, long>{stability, std::stol(m[1]),
                                       m[3].matched ? std::stol(m[3]) : 0};
  };
  const auto ra = rank(a);
  const auto rb = rank(b);
  if (ra != rb) return ra < rb;
  return a > b;  // non-Kubernetes versions: alphabetical, first is best
}

nlohmann::json VersionDocument() {
  return {{"major", "1"},
          {"minor", "32"},
          {"gitVersion", "v1.32.0-autodist-testdouble"},
          {"gitCommit", "0000000000000000000000000000000000000000"},
          {"gitTreeState", "clean"},
          {"buildDate", "2025-01-01T00:00:00Z"},
          {"goVersion", "go1.23.0"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

nlohmann::json LegacyApiVersions(const std::string& server_address) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}};
}

nlohmann::json LegacyGroupList(const std::vector<ResourceInfo>& resources) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : Groups(resources)) groups.push_back(LegacyGroupEntry(resources, g));
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

std::optional<nlohmann::json> LegacyGroup(const std::vector<ResourceInfo>& resources,
                                          const std::string& group) {
  if (Versions(resources, group).empty()) return std::nullopt;
  nlohmann::json out = LegacyGroupEntry(resources, group);
  out["kind"] = "APIGroup";
  out["apiVersion"] = "v1";
  return out;
}

std::optional<nlohmann::json> ResourceList(const std::vector<ResourceInfo>& resources,
                                           const std::string& group, const std::string& version) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : resources) {
    if (r.group != group || r.version != version) continue;
    nlohmann::json entry = {{"name", r.plural},
                            {"singularName", r.singular},
                            {"namespaced", r.namespaced},
                            {"kind", r.kind},
                            {"verbs", kVerbs}};
    if (!r.short_names.empty()) entry["shortNames"] = r.short_names;
    if (!r.categories.empty()) entry["categories"] = r.categories;
    list.push_back(entry);
    if (r.has_status) {
      list.push_back({{"name", r.plural + "/status"},
                      {"singularName", ""},
                      {"namespaced", r.namespaced},
                      {"kind", r.kind},
                      {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (list.empty()) return std::nullopt;
  return nlohmann::json{{"kind", "APIResourceList"},
                        {"apiVersion", "v1"},
                        {"groupVersion", GroupVersion(group, version)},
                        {"resources", list}};
}

nlohmann::json AggregatedDiscovery(const std::vector<ResourceInfo>& resources, bool core,
                                   const std::string& version) {
  nlohmann::json items = nlohmann::json::array();
  const std::vector<std::string> groups = core ? std::vector<std::string>{""} : Groups(resources);
  for (const auto& g : groups) {
    nlohmann::json versions = nlohmann::json::array();
    for (const auto& v : Versions(resources, g)) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& r : resources) {
        if (r.group == g && r.version == v) list.push_back(AggregatedResource(r));
      }
      versions.push_back({{"version", v}, {"resources", list}, {"freshness", "Current"}});
    }
    items.push_back(
        {{"metadata", {{"name", g}, {"creationTimestamp", nullptr}}}, {"versions", versions}});
  }
  return {{"kind", "APIGroupDiscoveryList"},
          {"apiVersion", "apidiscovery.k8s.io/" + version},
          {"metadata", nlohmann::json::object()},
          {"items", items}};
}

nlohmann::json OpenApiV3Index(const std::vector<ResourceInfo>& resources) {
  nlohmann::json paths = nlohmann::json::object();
  std::set<std::pair<std::string, std::string>> gvs;
  for (const auto& r : resources) gvs.insert({r.group, r.version});
  for (const auto& [group, version] : gvs) {
    const std::string path = GvPath(group, version);
    const auto doc = OpenApiV3Document(resources, path);
    paths[path] = {{"serverRelativeURL", "/openapi/v3/" + path + "?hash=" + Hash(doc->dump())}};
  }
  return {{"paths", paths}};
}

std::optional<nlohmann::json> OpenApiV3Document(const std::vector<ResourceInfo>& resources,
                                                const std::string& gv_path) {
  nlohmann::json paths = nlohmann::json::object();
  nlohmann::json schemas = nlohmann::json::object();
  for (const auto& r : resources) {
    if (GvPath(r.group, r.version) != gv_path) continue;
    const std::string base =
        "/" + gv_path + (r.namespaced ? "/namespaces/{namespace}/" : "/") + r.plural;
    paths[base] = {{"get", Operation(r, "list", false)}, {"post", Operation(r, "post", false)}};
    paths[base + "/{name}"] = {{"get", Operation(r, "get", false)},
                               {"put", Operation(r, "put", false)},
                               {"patch", Operation(r, "patch", true)},
                               {"delete", Operation(r, "delete", false)}};
    if (r.is_custom && r.schema.is_object()) {
      nlohmann::json schema = r.schema;
      schema["x-kubernetes-group-version-kind"] = {
          {{"group", r.group}, {"version", r.version}, {"kind", r.kind}}};
      schemas[ComponentName(r)] = schema;
    }
  }
  if (paths.empty()) return std::nullopt;
  return nlohmann::json{{"openapi", "3.0.0"},
                        {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
                        {"paths", paths},
                        {"components", {{"schemas", schemas}}}};
}

}  // namespace autodist::k8s
