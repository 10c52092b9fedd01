#include "tests/k8s/patch.h"

#include <algorithm>

#include "tests/k8s/api_error.h"

namespace autodist::k8s {
namespace {

// Merge keys of the list fields of built-in kinds (the patchMergeKey struct tags in k8s.io/api).
std::string MergeKey(const std::string& parent, const std::string& field) {
  if (field == "containers" || field == "initContainers" || field == "ephemeralContainers" ||
      field == "env" || field == "volumes" || field == "imagePullSecrets" ||
      field == "resourceClaims") {
    return "name";
  }
  if (field == "ports") {
    return parent == "containers" || parent == "initContainers" ? "containerPort" : "port";
  }
  if (field == "volumeMounts") return "mountPath";
  if (field == "volumeDevices") return "devicePath";
  if (field == "conditions") return "type";
  if (field == "ownerReferences") return "uid";
  if (field == "hostAliases") return "ip";
  if (field == "readinessGates") return "conditionType";
  if (field == "topologySpreadConstraints") return "topologyKey";
  return "";
}

bool IsPrimitiveMergeList(const std::string& field) { return field == "finalizers"; }

nlohmann::json Strategic(const nlohmann::json& target, const nlohmann::json& patch,
                         const std::string& parent);

nlohmann::json MergeList(const nlohmann::json& target, const nlohmann::json& patch,
                         const std::string& parent, const std::string& field) {
  const std::string key = MergeKey(parent, field);
  const bool objects = !key.empty() && std::all_of(patch.begin(), patch.end(),
                                                   [](const auto& e) { return e.is_object(); });
  if (objects) {
    // A list-level {"$patch": "replace"} element means: the rest of the patch list replaces.
    for (const auto& element : patch) {
      if (element.value("$patch", "") == "replace") {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& e : patch) {
          if (e.value("$patch", "") != "replace") out.push_back(e);
        }
        return out;
      }
    }
    nlohmann::json out = target.is_array() ? target : nlohmann::json::array();
    for (const auto& element : patch) {
      if (!element.contains(key)) {
        out.push_back(element);
        continue;
      }
      auto match = std::find_if(out.begin(), out.end(), [&](const nlohmann::json& e) {
        return e.is_object() && e.contains(key) && e[key] == element[key];
      });
      if (element.value("$patch", "") == "delete") {
        if (match != out.end()) out.erase(match);
      } else if (match != out.end()) {
        *match = Strategic(*match, element, field);
      } else {
        out.push_back(Strategic(nlohmann::json::object(), element, field));
      }
    }
    return out;
  }
  if (IsPrimitiveMergeList(field) && target.is_array()) {
    nlohmann::json out = target;
    for (const auto& element : patch) {
      if (std::find(out.begin(), out.end(), element) == out.end()) out.push_back(element);
    }
    return out;
  }
  return patch;
}

nlohmann::json Strategic(const nlohmann::json& target, const nlohmann::json& patch,
                         const std::string& parent) {
  if (!patch.is_object()) return patch;
  const std::string directive = patch.value("$patch", "");
  if (directive == "replace") {
    nlohmann::json out = patch;
    out.erase("$patch");
    return out;
  }
  nlohmann::json out = target.is_object() ? target : nlohmann::json::object();
  for (const auto& [key, value] : patch.items()) {
    if (key == "$patch" || key == "$retainKeys" || key.rfind("$setElementOrder/", 0) == 0) {
      continue;
    }
    if (key.rfind("$deleteFromPrimitiveList/", 0) == 0) {
      const std::string field = key.substr(std::string("$deleteFromPrimitiveList/").size());
      if (out.contains(field) && out[field].is_array()) {
        nlohmann::json kept = nlohmann::json::array();
        for (const auto& e : out[field]) {
          if (std::find(value.begin(), value.end(), e) == value.end()) kept.push_back(e);
        }
        out[field] = kept;
      }
      continue;
    }
    if (value.is_null() || (value.is_object() && value.value("$patch", "") == "delete")) {
      out.erase(key);
    } else if (value.is_object()) {
      out[key] = Strategic(out.contains(key) ? out[key] : nlohmann::json::object(), value, key);
    } else if (value.is_array()) {
      out[key] = MergeList(out.contains(key) ? out[key] : nlohmann::json(), value, parent, key);
    } else {
      out[key] = value;
    }
  }
  if (patch.contains("$retainKeys") && patch["$retainKeys"].is_array()) {
    const auto& keep = patch["$retainKeys"];
    for (auto it = out.begin(); it != out.end();) {
      if (std::find(keep.begin(), keep.end(), it.key()) == keep.end()) {
        it = out.erase(it);
      } else {
        ++it;
      }
    }
  }
  return out;
}

}  // namespace

PatchType ParsePatchType(const std::string& content_type) {
  const std::string type = content_type.substr(0, content_type.find(';'));
  if (type == "application/json-patch+json") return PatchType::kJsonPatch;
  if (type == "application/merge-patch+json") return PatchType::kMergePatch;
  if (type == "application/strategic-merge-patch+json") return PatchType::kStrategicMergePatch;
  if (type == "application/apply-patch+yaml" || type == "application/apply-patch+json") {
    return PatchType::kApplyPatch;
  }
  FailApi(415, "UnsupportedMediaType",
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json-patch+json, application/merge-patch+json, "
          "application/apply-patch+yaml, application/strategic-merge-patch+json");
}

nlohmann::json ApplyJsonPatch(const nlohmann::json& target, const nlohmann::json& patch) {
  if (!patch.is_array()) {
    FailApi(400, "BadRequest", "json patch must be an array of operations, got {}",
            patch.type_name());
  }
  try {
    return target.patch(patch);
  } catch (const nlohmann::json::exception& e) {
    FailApi(422, "Invalid", "the json patch could not be applied: {}", e.what());
  }
}

nlohmann::json ApplyMergePatch(const nlohmann::json& target, const nlohmann::json& patch) {
  nlohmann::json out = target;
  out.merge_patch(patch);
  return out;
}

nlohmann::json ApplyStrategicMergePatch(const nlohmann::json& target, const nlohmann::json& patch) {
  return Strategic(target, patch, "");
}

}  // namespace autodist::k8s
