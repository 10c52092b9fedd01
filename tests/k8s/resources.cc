#include "tests/k8s/resources.h"

#include <algorithm>
#include <cctype>

#include "tests/k8s/api_error.h"
#include "tests/k8s/clock.h"

namespace autodist::k8s {
namespace {

ResourceInfo Builtin(std::string group, std::string version, std::string plural,
                     std::string singular, std::string kind, bool namespaced,
                     std::vector<std::string> short_names, bool has_status,
                     std::vector<std::string> categories = {}) {
  ResourceInfo info;
  info.group = std::move(group);
  info.version = std::move(version);
  info.plural = std::move(plural);
  info.singular = std::move(singular);
  info.kind = std::move(kind);
  info.namespaced = namespaced;
  info.short_names = std::move(short_names);
  info.has_status = has_status;
  info.categories = std::move(categories);
  return info;
}

[[noreturn]] void InvalidCrd(const nlohmann::json& crd, const std::string& field,
                             const std::string& message) {
  std::string name = crd.value("/metadata/name"_json_pointer, std::string());
  nlohmann::json details = {
      {"name", name},
      {"group", "apiextensions.k8s.io"},
      {"kind", "CustomResourceDefinition"},
      {"causes", {{{"reason", "FieldValueRequired"}, {"message", message}, {"field", field}}}}};
  throw ApiError(422, "Invalid",
                 fmt::format("CustomResourceDefinition.apiextensions.k8s.io \"{}\" is invalid: "
                             "{}: {}",
                             name, field, message),
                 details);
}

std::string RequiredString(const nlohmann::json& crd, const std::string& pointer) {
  const auto ptr = nlohmann::json::json_pointer(pointer);
  if (!crd.contains(ptr) || !crd.at(ptr).is_string() || crd.at(ptr).get<std::string>().empty()) {
    std::string field = pointer.substr(1);
    std::replace(field.begin(), field.end(), '/', '.');
    InvalidCrd(crd, field, "Required value");
  }
  return crd.at(ptr).get<std::string>();
}

std::vector<std::string> Strings(const nlohmann::json& names, const char* field) {
  std::vector<std::string> out;
  if (names.contains(field) && names[field].is_array()) {
    for (const auto& v : names[field]) out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

std::vector<ResourceInfo> BuiltinResources() {
  return {
      Builtin("", "v1", "pods", "pod", "Pod", true, {"po"}, true, {"all"}),
      Builtin("", "v1", "services", "service", "Service", true, {"svc"}, true, {"all"}),
      Builtin("", "v1", "configmaps", "configmap", "ConfigMap", true, {"cm"}, false),
      Builtin("", "v1", "secrets", "secret", "Secret", true, {}, false),
      Builtin("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", true, {"quota"}, true),
      Builtin("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, {"sa"}, false),
      Builtin("", "v1", "events", "event", "Event", true, {"ev"}, false),
      Builtin("", "v1", "endpoints", "endpoints", "Endpoints", true, {"ep"}, false),
      Builtin("", "v1", "namespaces", "namespace", "Namespace", false, {"ns"}, true),
      Builtin("", "v1", "nodes", "node", "Node", false, {"no"}, true),
      Builtin("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", true,
              {"netpol"}, false),
      Builtin("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, {}, false),
      Builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
              "CustomResourceDefinition", false, {"crd", "crds"}, true),
  };
}

std::vector<ResourceInfo> ResourcesFromCrd(const nlohmann::json& crd) {
  const std::string name = RequiredString(crd, "/metadata/name");
  const std::string group = RequiredString(crd, "/spec/group");
  const std::string plural = RequiredString(crd, "/spec/names/plural");
  const std::string kind = RequiredString(crd, "/spec/names/kind");
  const std::string scope = RequiredString(crd, "/spec/scope");
  if (name != plural + "." + group) {
    InvalidCrd(crd, "metadata.name", fmt::format("must be spec.names.plural+\".\"+spec.group"));
  }
  if (scope != "Namespaced" && scope != "Cluster") {
    InvalidCrd(crd, "spec.scope", "supported values: \"Cluster\", \"Namespaced\"");
  }
  const auto& versions = crd["spec"].value("versions", nlohmann::json::array());
  if (!versions.is_array() || versions.empty()) {
    InvalidCrd(crd, "spec.versions", "must have exactly one version marked as storage version");
  }
  const auto& names = crd["spec"]["names"];
  std::vector<ResourceInfo> out;
  for (const auto& v : versions) {
    if (!v.value("served", false)) continue;
    ResourceInfo info;
    info.group = group;
    info.version = v.value("name", std::string());
    if (info.version.empty()) InvalidCrd(crd, "spec.versions[].name", "Required value");
    info.plural = plural;
    info.singular = names.value("singular", std::string());
    if (info.singular.empty()) {
      info.singular = kind;
      std::transform(info.singular.begin(), info.singular.end(), info.singular.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    info.kind = kind;
    info.namespaced = scope == "Namespaced";
    info.short_names = Strings(names, "shortNames");
    info.categories = Strings(names, "categories");
    info.has_status = v.contains("subresources") && v["subresources"].contains("status");
    info.is_custom = true;
    info.storage = v.value("storage", false);
    if (v.contains("schema") && v["schema"].contains("openAPIV3Schema")) {
      info.schema = v["schema"]["openAPIV3Schema"];
    }
    info.printer_columns = v.value("additionalPrinterColumns", nlohmann::json::array());
    for (const auto& field : v.value("selectableFields", nlohmann::json::array())) {
      std::string path = field.value("jsonPath", std::string());
      if (!path.empty() && path[0] == '.') path = path.substr(1);
      info.selectable_fields.push_back(path);
    }
    out.push_back(std::move(info));
  }
  return out;
}

void SetCrdStatus(nlohmann::json& crd) {
  const std::string now = NowRfc3339();
  auto condition = [&](const char* type, const char* reason, const char* message) {
    return nlohmann::json{{"type", type},
                          {"status", "True"},
                          {"lastTransitionTime", now},
                          {"reason", reason},
                          {"message", message}};
  };
  nlohmann::json stored = nlohmann::json::array();
  for (const auto& v : crd["spec"]["versions"]) {
    if (v.value("storage", false)) stored.push_back(v["name"]);
  }
  auto& status = crd["status"];
  status["acceptedNames"] = crd["spec"]["names"];
  // Kept once set, so rewriting an unchanged CRD is a no-op.
  if (!status.contains("conditions")) {
    status["conditions"] = {
        condition("NamesAccepted", "NoConflicts", "no conflicts found"),
        condition("Established", "InitialNamesAccepted", "the initial names have been accepted")};
  }
  status["storedVersions"] = stored;
}

}  // namespace autodist::k8s
