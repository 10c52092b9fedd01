#include "tests/k8s/rest.h"

#include "tests/k8s/api_error.h"
#include "tests/k8s/clock.h"
#include "tests/k8s/pod_security.h"
#include "tests/k8s/resource_quota.h"
#include "tests/k8s/yaml_json.h"

namespace autodist::k8s {
namespace {

std::vector<std::string>& Warnings(const WriteOptions& options) {
  static thread_local std::vector<std::string> discarded;
  if (options.warnings != nullptr) return *options.warnings;
  discarded.clear();
  return discarded;
}

// Apply patches arrive as YAML (or JSON, which is YAML).
nlohmann::json ParseApplyBody(const std::string& body) {
  std::vector<nlohmann::json> docs;
  try {
    docs = ParseYamlDocuments(body);
  } catch (const Error& e) {
    FailApi(400, "BadRequest", "error decoding apply patch: {}", e.what());
  }
  if (docs.size() != 1) {
    FailApi(400, "BadRequest", "an apply patch must be one YAML document, got {}", docs.size());
  }
  return docs[0];
}

}  // namespace

nlohmann::json ParseBody(const std::string& body) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_discarded()) {
    FailApi(400, "BadRequest", "the request body is not valid JSON ({} bytes)", body.size());
  }
  return parsed;
}

void NotFound(const ResourceInfo& r, const std::string& name) {
  throw ApiError(404, "NotFound", fmt::format("{} \"{}\" not found", r.Key(), name),
                 {{"name", name}, {"group", r.group}, {"kind", r.plural}});
}

ObjectPtr Rest::Create(const ResourceInfo& r, const std::string& ns, nlohmann::json body,
                       const WriteOptions& options) {
  CheckEnvelope(r, ns, body);
  auto& meta = body["metadata"];
  const std::string generate = meta.value("generateName", "");
  const bool generated = meta.value("name", "").empty() && !generate.empty();
  // Pod Security Admission reads the namespace's labels, and ResourceQuota admission its quotas
  // and pods; read here, outside the store's lock (the real plugins read their caches).
  const bool pod = !r.is_custom && r.plural == "pods";
  ObjectPtr space;
  std::vector<nlohmann::json> quotas, pods;
  if (pod) {
    if (const auto namespaces = store_.FindResource("", "v1", "namespaces")) {
      space = store_.Get(*namespaces, "", ns);
    }
    const auto list = [&](const ResourceInfo& resource) {
      std::vector<nlohmann::json> out;
      for (const ObjectPtr& item : store_.ListAll(resource, ns)) out.push_back(item->object);
      return out;
    };
    if (const auto resource_quotas = store_.FindResource("", "v1", "resourcequotas")) {
      quotas = list(*resource_quotas);
      if (!quotas.empty()) pods = list(r);
    }
  }
  // generateName collisions are retried, as the real server's random suffix makes them rare.
  for (int attempt = 0;; ++attempt) {
    if (generated) meta["name"] = generate + RandomSuffix(5);
    const std::string name = meta.value("name", "");
    ValidateName(r, name);
    try {
      return store_.Mutate(
          r, ns, name,
          [&](const ObjectPtr& current) -> std::optional<nlohmann::json> {
            if (current != nullptr) {
              throw ApiError(409, "AlreadyExists",
                             fmt::format("{} \"{}\" already exists", r.Key(), name),
                             {{"name", name}, {"group", r.group}, {"kind", r.plural}});
            }
            nlohmann::json object = body;
            PrepareForCreate(r, object, options.field_validation, Warnings(options));
            if (pod) {
              EnforcePodSecurity(space ? space->object : nlohmann::json(), object);
              EnforceResourceQuotas(quotas, pods, object);
            }
            return object;
          },
          options.dry_run);
    } catch (const ApiError& e) {
      if (!generated || e.reason() != "AlreadyExists" || attempt >= 8) throw;
    }
  }
}

ObjectPtr Rest::Update(const ResourceInfo& r, const std::string& ns, const std::string& name,
                       nlohmann::json body, bool status_subresource, const WriteOptions& options) {
  CheckEnvelope(r, ns, body);
  return store_.Mutate(
      r, ns, name,
      [&](const ObjectPtr& current) -> std::optional<nlohmann::json> {
        if (current == nullptr) NotFound(r, name);
        nlohmann::json object = body;
        if (!PrepareForUpdate(r, current->object, object, status_subresource,
                              options.field_validation, Warnings(options))) {
          return std::nullopt;
        }
        return object;
      },
      options.dry_run);
}

ObjectPtr Rest::Patch(const ResourceInfo& r, const std::string& ns, const std::string& name,
                      PatchType type, const std::string& body, bool status_subresource,
                      const WriteOptions& options) {
  const nlohmann::json patch =
      type == PatchType::kApplyPatch ? ParseApplyBody(body) : ParseBody(body);
  if (type == PatchType::kApplyPatch && store_.Get(r, ns, name) == nullptr) {
    // Server-side apply of a new object is a create (field ownership is not tracked).
    nlohmann::json object = patch;
    if (!object.is_object()) FailApi(400, "BadRequest", "an apply patch must be an object");
    object["metadata"]["name"] = name;
    return Create(r, ns, object, options);
  }
  return store_.Mutate(
      r, ns, name,
      [&](const ObjectPtr& current) -> std::optional<nlohmann::json> {
        if (current == nullptr) NotFound(r, name);
        nlohmann::json patched;
        switch (type) {
          case PatchType::kJsonPatch:
            patched = ApplyJsonPatch(current->object, patch);
            break;
          case PatchType::kMergePatch:
          case PatchType::kApplyPatch:
            patched = ApplyMergePatch(current->object, patch);
            break;
          case PatchType::kStrategicMergePatch:
            if (r.is_custom) {
              FailApi(415, "UnsupportedMediaType",
                      "the body of the request was in an unknown format - accepted media types "
                      "include: application/json-patch+json, application/merge-patch+json, "
                      "application/apply-patch+yaml");
            }
            patched = ApplyStrategicMergePatch(current->object, patch);
            break;
        }
        CheckEnvelope(r, ns, patched);
        if (!PrepareForUpdate(r, current->object, patched, status_subresource,
                              options.field_validation, Warnings(options))) {
          return std::nullopt;
        }
        return patched;
      },
      options.dry_run);
}

ObjectPtr Rest::Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                       const DeleteOptions& options) {
  return store_.Delete(r, ns, name, options);
}

}  // namespace autodist::k8s
