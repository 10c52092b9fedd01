#include "tests/k8s/object_rules.h"

#include <fmt/format.h>

#include <atomic>
#include <regex>

#include "tests/k8s/api_error.h"
#include "tests/k8s/base64.h"
#include "tests/k8s/clock.h"
#include "tests/k8s/schema.h"

namespace autodist::k8s {
namespace {

[[noreturn]] void Invalid(const ResourceInfo& r, const std::string& name,
                          const std::vector<nlohmann::json>& causes) {
  std::string summary;
  for (const auto& cause : causes) {
    summary += (summary.empty() ? "" : ", ") + cause.value("message", "");
  }
  if (causes.size() > 1) summary = "[" + summary + "]";
  throw ApiError(422, "Invalid",
                 fmt::format("{} \"{}\" is invalid: {}", r.QualifiedKind(), name, summary),
                 {{"name", name}, {"group", r.group}, {"kind", r.kind}, {"causes", causes}});
}

// Defaults of built-in kinds; `create` adds those only a new object gets (initial status,
// allocated cluster IP).
void DefaultBuiltin(const ResourceInfo& r, nlohmann::json& object, bool create) {
  if (r.is_custom) return;
  auto& spec = object["spec"];
  if (r.plural == "pods") {
    if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";
    if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
    if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
    for (const char* list : {"initContainers", "containers"}) {
      if (!spec.contains(list)) continue;
      for (auto& c : spec[list]) {
        const std::string image = c.value("image", "");
        if (!c.contains("imagePullPolicy")) {
          const bool latest = image.find(':') == std::string::npos || image.ends_with(":latest");
          c["imagePullPolicy"] = latest ? "Always" : "IfNotPresent";
        }
        if (c.contains("ports")) {
          for (auto& p : c["ports"]) {
            if (!p.contains("protocol")) p["protocol"] = "TCP";
          }
        }
      }
    }
    // A new pod is Pending until a node (the test's node agent) reports otherwise.
    if (create) object["status"] = {{"phase", "Pending"}};
  } else if (r.plural == "services") {
    if (!spec.contains("type")) spec["type"] = "ClusterIP";
    if (!spec.contains("sessionAffinity")) spec["sessionAffinity"] = "None";
    if (create && !spec.contains("clusterIP")) {
      static std::atomic<unsigned> next_ip{10};
      const unsigned n = next_ip++;
      spec["clusterIP"] = fmt::format("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff);
    }
    if (spec.contains("clusterIP")) spec["clusterIPs"] = {spec["clusterIP"]};
    if (spec.contains("ports")) {
      for (auto& p : spec["ports"]) {
        if (!p.contains("protocol")) p["protocol"] = "TCP";
        if (!p.contains("targetPort") && p.contains("port")) p["targetPort"] = p["port"];
      }
    }
    if (create) object["status"] = {{"loadBalancer", nlohmann::json::object()}};
  } else if (r.plural == "secrets") {
    // stringData is write-only: merged into data (base64), never stored.
    if (object.contains("stringData") && object["stringData"].is_object()) {
      for (const auto& [key, value] : object["stringData"].items()) {
        if (value.is_string()) object["data"][key] = Base64Encode(value.get<std::string>());
      }
    }
    object.erase("stringData");
    if (!object.contains("type")) object["type"] = "Opaque";
  } else if (r.plural == "namespaces") {
    if (!spec.contains("finalizers")) spec["finalizers"] = {"kubernetes"};
    if (create) object["status"] = {{"phase", "Active"}};
    object["metadata"]["labels"]["kubernetes.io/metadata.name"] = object["metadata"]["name"];
  }
  if (spec.is_null()) object.erase("spec");
}

void ApplyCustomSchema(const ResourceInfo& r, nlohmann::json& object, FieldValidation validation,
                       std::vector<std::string>& warnings) {
  if (!r.is_custom || r.schema.is_null()) return;
  const SchemaReport report = ApplySchema(r.schema, object);
  const std::string name = object["metadata"].value("name", "");
  if (!report.unknown_fields.empty() && validation == FieldValidation::kStrict) {
    std::string list;
    for (const auto& f : report.unknown_fields) {
      list += (list.empty() ? "" : ", ") + fmt::format("unknown field \"{}\"", f);
    }
    FailApi(400, "BadRequest",
            "{} in version \"{}\" cannot be handled as a {}: strict decoding "
            "error: {}",
            r.kind, r.ApiVersion(), r.kind, list);
  }
  if (validation == FieldValidation::kWarn) {
    for (const auto& f : report.unknown_fields) warnings.push_back("unknown field \"" + f + "\"");
  }
  if (!report.causes.empty()) Invalid(r, name, report.causes);
}

// A pod's spec is immutable but for images, activeDeadlineSeconds and tolerations, as the real
// server enforces. spec.nodeName may be set once, standing in for the binding subresource of a
// cluster that has a scheduler.
void CheckPodSpecUpdate(const ResourceInfo& r, const std::string& name, const nlohmann::json& old,
                        const nlohmann::json& next) {
  nlohmann::json before = old.value("spec", nlohmann::json::object());
  nlohmann::json after = next.value("spec", nlohmann::json::object());
  for (const char* list : {"containers", "initContainers"}) {
    if (!before.contains(list) || !after.contains(list) || !after[list].is_array()) continue;
    for (size_t i = 0; i < before[list].size() && i < after[list].size(); ++i) {
      if (after[list][i].is_object() && before[list][i].contains("image")) {
        after[list][i]["image"] = before[list][i]["image"];
      }
    }
  }
  for (auto* spec : {&before, &after}) {
    spec->erase("activeDeadlineSeconds");
    spec->erase("tolerations");
  }
  if (before.value("nodeName", "").empty()) {
    before.erase("nodeName");
    after.erase("nodeName");
  }
  if (before == after) return;
  Invalid(r, name,
          {{{"reason", "FieldValueForbidden"},
            {"message",
             "spec: Forbidden: pod updates may not change fields other than "
             "`spec.containers[*].image`,`spec.initContainers[*].image`,"
             "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
             "tolerations)"},
            {"field", "spec"}}});
}

// What ConfigMaps and Secrets hold at most (corevalidation.MaxSecretSize): the values' bytes,
// summed (binaryData and a Secret's data counted decoded), as ValidateConfigMap and
// ValidateSecret add them up. Past it, the real server answers 422.
constexpr size_t kMaxDataBytes = 1024 * 1024;

size_t ValueBytes(const nlohmann::json& values, bool base64) {
  size_t total = 0;
  if (!values.is_object()) return total;
  for (const auto& [key, value] : values.items()) {
    if (!value.is_string()) continue;
    const std::string& text = value.get_ref<const std::string&>();
    total += base64 ? Base64Decode(text).size() : text.size();
  }
  return total;
}

void CheckDataSize(const ResourceInfo& r, const nlohmann::json& object) {
  if (r.is_custom || (r.plural != "configmaps" && r.plural != "secrets")) return;
  const bool secret = r.plural == "secrets";
  const size_t total = secret ? ValueBytes(object.value("data", nlohmann::json()), true)
                              : ValueBytes(object.value("data", nlohmann::json()), false) +
                                    ValueBytes(object.value("binaryData", nlohmann::json()), true);
  if (total <= kMaxDataBytes) return;
  const std::string field = secret ? "data" : "[]";
  Invalid(r, object["metadata"].value("name", ""),
          {{{"reason", "FieldValueTooLong"},
            {"message",
             fmt::format("{}: Too long: may not be more than {} bytes", field, kMaxDataBytes)},
            {"field", secret ? "data" : ""}}});
}

// Custom resources and CRDs carry metadata.generation; the built-in kinds served here (pods,
// configmaps, services, ...) do not in Kubernetes 1.32.
bool TracksGeneration(const ResourceInfo& r) {
  return r.is_custom || r.plural == "customresourcedefinitions";
}

// Everything but metadata (and status, when it has its own endpoint) — what generation tracks.
nlohmann::json SpecPart(const ResourceInfo& r, const nlohmann::json& object) {
  nlohmann::json out = object;
  out.erase("metadata");
  if (r.has_status) out.erase("status");
  return out;
}

}  // namespace

FieldValidation ParseFieldValidation(const std::string& value) {
  if (value.empty() || value == "Warn") return FieldValidation::kWarn;
  if (value == "Strict") return FieldValidation::kStrict;
  if (value == "Ignore") return FieldValidation::kIgnore;
  FailApi(400, "BadRequest", "fieldValidation parameter unsupported: {} (Strict, Warn, Ignore)",
          value);
}

void CheckEnvelope(const ResourceInfo& r, const std::string& ns, nlohmann::json& body) {
  if (!body.is_object()) {
    FailApi(400, "BadRequest", "the request body must be a JSON object, got {}", body.type_name());
  }
  const std::string api_version = body.value("apiVersion", "");
  const std::string kind = body.value("kind", "");
  if ((!api_version.empty() && api_version != r.ApiVersion()) ||
      (!kind.empty() && kind != r.kind)) {
    FailApi(400, "BadRequest",
            "the API version in the data ({}) does not match the expected API "
            "version ({}) or kind {} is not {}",
            api_version, r.ApiVersion(), kind, r.kind);
  }
  body["apiVersion"] = r.ApiVersion();
  body["kind"] = r.kind;
  if (!body.contains("metadata") || !body["metadata"].is_object()) {
    body["metadata"] = nlohmann::json::object();
  }
  auto& meta = body["metadata"];
  if (!r.namespaced) {
    meta.erase("namespace");
    return;
  }
  const std::string body_ns = meta.value("namespace", "");
  if (!body_ns.empty() && body_ns != ns) {
    FailApi(400, "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the "
            "request");
  }
  meta["namespace"] = ns;
}

void ValidateName(const ResourceInfo& r, const std::string& name) {
  const bool label = r.plural == "namespaces" || r.plural == "services";
  static const std::regex kSubdomain(
      "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  static const std::regex kLabel("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  const size_t max = label ? 63 : 253;
  if (name.empty()) {
    Invalid(r, name,
            {{{"reason", "FieldValueRequired"},
              {"message", "metadata.name: Required value: name or generateName is required"},
              {"field", "metadata.name"}}});
  }
  if (name.size() > max || !std::regex_match(name, label ? kLabel : kSubdomain)) {
    const std::string what = label ? "RFC 1123 label" : "RFC 1123 subdomain";
    Invalid(r, name,
            {{{"reason", "FieldValueInvalid"},
              {"message", fmt::format("metadata.name: Invalid value: \"{}\": a lowercase {} must "
                                      "consist of lower case alphanumeric characters, '-' or '.', "
                                      "and must start and end with an alphanumeric character "
                                      "(at most {} characters)",
                                      name, what, max)},
              {"field", "metadata.name"}}});
  }
}

void PrepareForCreate(const ResourceInfo& r, nlohmann::json& object, FieldValidation validation,
                      std::vector<std::string>& warnings) {
  auto& meta = object["metadata"];
  meta["uid"] = NewUid();
  meta["creationTimestamp"] = NowRfc3339();
  for (const char* server_owned : {"resourceVersion", "deletionTimestamp", "generation",
                                   "deletionGracePeriodSeconds", "selfLink", "managedFields"}) {
    meta.erase(server_owned);
  }
  if (TracksGeneration(r)) meta["generation"] = 1;
  // With a status subresource, status is written only through it.
  if (r.is_custom && r.has_status) object.erase("status");
  DefaultBuiltin(r, object, true);
  CheckDataSize(r, object);
  ApplyCustomSchema(r, object, validation, warnings);
  if (r.Key() == "customresourcedefinitions.apiextensions.k8s.io") {
    ResourcesFromCrd(object);
    SetCrdStatus(object);
  }
}

bool PrepareForUpdate(const ResourceInfo& r, const nlohmann::json& old, nlohmann::json& object,
                      bool status_subresource, FieldValidation validation,
                      std::vector<std::string>& warnings) {
  const auto& old_meta = old["metadata"];
  const std::string name = old_meta.value("name", "");
  const std::string given_rv = object["metadata"].value("resourceVersion", "");
  if (!given_rv.empty() && given_rv != old_meta.value("resourceVersion", "")) {
    throw ApiError(409, "Conflict",
                   fmt::format("Operation cannot be fulfilled on {} \"{}\": the object has been "
                               "modified; please apply your changes to the latest version and "
                               "try again",
                               r.Key(), name),
                   {{"name", name}, {"group", r.group}, {"kind", r.plural}});
  }
  if (object["metadata"].value("name", name) != name) {
    FailApi(400, "BadRequest",
            "the name of the object ({}) does not match the name on the URL ({})",
            object["metadata"].value("name", ""), name);
  }
  if (status_subresource) {
    // Only status moves; spec and metadata stay as stored.
    nlohmann::json merged = old;
    if (object.contains("status")) {
      merged["status"] = object["status"];
    } else {
      merged.erase("status");
    }
    object = std::move(merged);
  } else {
    auto& meta = object["metadata"];
    for (const char* server_owned : {"uid", "creationTimestamp", "deletionTimestamp",
                                     "deletionGracePeriodSeconds", "generation", "namespace"}) {
      if (old_meta.contains(server_owned)) {
        meta[server_owned] = old_meta[server_owned];
      } else {
        meta.erase(server_owned);
      }
    }
    meta.erase("managedFields");
    if (r.has_status) {
      if (old.contains("status")) {
        object["status"] = old["status"];
      } else {
        object.erase("status");
      }
    }
  }
  if (!status_subresource) {
    DefaultBuiltin(r, object, false);
    if (r.plural == "services" && !r.is_custom && old.contains("spec") &&
        old["spec"].contains("clusterIP") && !object["spec"].contains("clusterIP")) {
      object["spec"]["clusterIP"] = old["spec"]["clusterIP"];  // allocated once, kept
      object["spec"]["clusterIPs"] = {old["spec"]["clusterIP"]};
    }
    if (r.plural == "pods" && !r.is_custom) CheckPodSpecUpdate(r, name, old, object);
    CheckDataSize(r, object);
  }
  ApplyCustomSchema(r, object, validation, warnings);
  if (r.Key() == "customresourcedefinitions.apiextensions.k8s.io") {
    ResourcesFromCrd(object);
    if (!status_subresource) SetCrdStatus(object);
  }
  if (TracksGeneration(r) && SpecPart(r, object) != SpecPart(r, old)) {
    object["metadata"]["generation"] = old_meta.value("generation", 0) + 1;
  }
  object["metadata"]["resourceVersion"] = old_meta.value("resourceVersion", "");
  return object != old;
}

}  // namespace autodist::k8s
