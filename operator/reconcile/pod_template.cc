#include "operator/reconcile/pod_template.h"

#include <set>
#include <string>

namespace autodist::reconcile {
namespace {

// Appends `additions` to the list `base[field]`; an addition replaces an entry with the same
// value of `key` (env by name, volumes by name, mounts by mountPath).
void MergeList(nlohmann::json& base, const char* field, const nlohmann::json& additions,
               const char* key) {
  nlohmann::json& list = base[field];
  if (!list.is_array()) list = nlohmann::json::array();
  for (const nlohmann::json& addition : additions) {
    bool replaced = false;
    for (nlohmann::json& entry : list) {
      if (entry.is_object() && entry.contains(key) && entry[key] == addition[key]) {
        entry = addition;
        replaced = true;
      }
    }
    if (!replaced) list.push_back(addition);
  }
  if (list.empty()) base.erase(field);
}

// Appends the entries of `additions` whose `key` no entry of `base[field]` has yet.
void AddMissing(nlohmann::json& base, const char* field, const nlohmann::json& additions,
                const char* key) {
  if (additions.empty()) return;
  nlohmann::json& list = base[field];
  if (!list.is_array()) list = nlohmann::json::array();
  for (const nlohmann::json& addition : additions) {
    bool present = false;
    for (const nlohmann::json& entry : list) {
      present =
          present || (entry.is_object() && entry.contains(key) && entry[key] == addition[key]);
    }
    if (!present) list.push_back(addition);
  }
}

// The user's runtime container with ours merged in.
nlohmann::json MergeContainer(nlohmann::json user, const nlohmann::json& runtime) {
  for (const char* field : {"image", "imagePullPolicy", "workingDir"}) {
    if (runtime.contains(field) && (!user.contains(field) || user[field].is_null())) {
      user[field] = runtime[field];
    }
  }
  user["command"] = runtime["command"];
  user["args"] = runtime["args"];
  if (runtime.contains("env")) MergeList(user, "env", runtime["env"], "name");
  if (runtime.contains("volumeMounts")) {
    MergeList(user, "volumeMounts", runtime["volumeMounts"], "mountPath");
  }
  if (runtime.contains("ports")) MergeList(user, "ports", runtime["ports"], "containerPort");
  // The user's security settings win where they set any; ours fill in the rest.
  if (runtime.contains("securityContext")) {
    nlohmann::json& security = user["securityContext"];
    if (!security.is_object()) security = nlohmann::json::object();
    for (const auto& [field, value] : runtime["securityContext"].items()) {
      if (!security.contains(field)) security[field] = value;
    }
  }
  if (runtime.contains("terminationMessagePolicy") && !user.contains("terminationMessagePolicy")) {
    user["terminationMessagePolicy"] = runtime["terminationMessagePolicy"];
  }
  if (runtime.contains("resources")) {
    for (const auto& [kind, quantities] : runtime["resources"].items()) {
      for (const auto& [resource, quantity] : quantities.items()) {
        user["resources"][kind][resource] = quantity;
      }
    }
  }
  return user;
}

// Every volume mount of the other containers, first one per mount path, without our volumes.
nlohmann::json SharedMounts(const nlohmann::json& containers, const std::string& runtime_name,
                            const std::set<std::string>& our_volumes) {
  nlohmann::json mounts = nlohmann::json::array();
  std::set<std::string> paths;
  for (const nlohmann::json& container : containers) {
    if (!container.is_object() || container.value("name", "") == runtime_name) continue;
    const auto found = container.find("volumeMounts");
    if (found == container.end() || !found->is_array()) continue;
    for (const nlohmann::json& mount : *found) {
      if (!mount.is_object()) continue;
      const std::string path = mount.value("mountPath", "");
      if (our_volumes.count(mount.value("name", "")) > 0 || !paths.insert(path).second) continue;
      mounts.push_back(mount);
    }
  }
  return mounts;
}

}  // namespace

nlohmann::json InjectRuntime(nlohmann::json pod_spec, const nlohmann::json& runtime,
                             const nlohmann::json& volumes) {
  if (!pod_spec.is_object()) pod_spec = nlohmann::json::object();
  nlohmann::json& containers = pod_spec["containers"];
  if (!containers.is_array()) containers = nlohmann::json::array();
  const std::string runtime_name = runtime.value("name", "");
  std::set<std::string> our_volumes;
  for (const nlohmann::json& volume : volumes) our_volumes.insert(volume.value("name", ""));

  // Mounts of the user's containers join ours, except at paths ours (or the user's own runtime
  // container) already use: the config directory is never hidden.
  const nlohmann::json shared = SharedMounts(containers, runtime_name, our_volumes);
  bool merged = false;
  for (nlohmann::json& existing : containers) {
    if (existing.is_object() && existing.value("name", "") == runtime_name) {
      existing = MergeContainer(existing, runtime);
      AddMissing(existing, "volumeMounts", shared, "mountPath");
      merged = true;
    }
  }
  if (!merged) {
    nlohmann::json sidecar = runtime;
    AddMissing(sidecar, "volumeMounts", shared, "mountPath");
    containers.push_back(std::move(sidecar));
  }
  MergeList(pod_spec, "volumes", volumes, "name");
  return pod_spec;
}

}  // namespace autodist::reconcile
