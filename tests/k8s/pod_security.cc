#include "tests/k8s/pod_security.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "tests/k8s/api_error.h"

namespace autodist::k8s {
namespace {

const nlohmann::json& At(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  const auto found = object.find(key);
  return found == object.end() ? kNull : *found;
}

std::vector<const nlohmann::json*> Containers(const nlohmann::json& spec) {
  std::vector<const nlohmann::json*> out;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    const nlohmann::json& containers = At(spec, list);
    if (!containers.is_array()) continue;
    for (const nlohmann::json& container : containers) out.push_back(&container);
  }
  return out;
}

std::string Quoted(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "\"" : ", \"") + name + "\"";
  return out;
}

// "container \"a\"" or "containers \"a\", \"b\"".
std::string ContainersPhrase(const std::vector<std::string>& names) {
  return (names.size() == 1 ? "container " : "containers ") + Quoted(names);
}

bool IsTrue(const nlohmann::json& value) { return value.is_boolean() && value.get<bool>(); }

// The capabilities a baseline pod may add (the container runtime's defaults).
const std::set<std::string> kBaselineCapabilities = {
    "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};
const std::set<std::string> kRestrictedVolumes = {"configMap", "csi",       "downwardAPI",
                                                  "emptyDir",  "ephemeral", "persistentVolumeClaim",
                                                  "projected", "secret"};

void Baseline(const nlohmann::json& spec, std::vector<std::string>& violations) {
  std::vector<std::string> host;
  for (const char* field : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (IsTrue(At(spec, field))) host.push_back(std::string(field) + "=true");
  }
  if (!host.empty())
    violations.push_back(fmt::format("host namespaces ({})", fmt::join(host, ", ")));
  std::vector<std::string> privileged;
  std::vector<std::string> capabilities;
  std::vector<std::string> host_ports;
  for (const nlohmann::json* container : Containers(spec)) {
    const std::string name = At(*container, "name").is_string() ? (*container)["name"] : "";
    const nlohmann::json& context = At(*container, "securityContext");
    if (IsTrue(At(context, "privileged"))) privileged.push_back(name);
    const nlohmann::json& added = At(At(context, "capabilities"), "add");
    if (added.is_array()) {
      for (const nlohmann::json& capability : added) {
        if (capability.is_string() && !kBaselineCapabilities.contains(capability)) {
          capabilities.push_back(
              fmt::format("container \"{}\" must not include \"{}\" in "
                          "securityContext.capabilities.add",
                          name, capability.get<std::string>()));
        }
      }
    }
    const nlohmann::json& ports = At(*container, "ports");
    if (ports.is_array()) {
      for (const nlohmann::json& port : ports) {
        if (At(port, "hostPort").is_number_integer() && port["hostPort"].get<int>() != 0) {
          host_ports.push_back(
              fmt::format("container \"{}\" uses hostPort {}", name, port["hostPort"].get<int>()));
        }
      }
    }
  }
  if (!privileged.empty()) {
    violations.push_back(fmt::format("privileged ({} must not set securityContext.privileged=true)",
                                     ContainersPhrase(privileged)));
  }
  if (!capabilities.empty()) {
    violations.push_back(
        fmt::format("non-default capabilities ({})", fmt::join(capabilities, ", ")));
  }
  std::vector<std::string> host_paths;
  const nlohmann::json& volumes = At(spec, "volumes");
  if (volumes.is_array()) {
    for (const nlohmann::json& volume : volumes) {
      if (volume.is_object() && volume.contains("hostPath")) {
        host_paths.push_back(volume.value("name", ""));
      }
    }
  }
  if (!host_paths.empty()) {
    violations.push_back(fmt::format("hostPath volumes ({} {})",
                                     host_paths.size() == 1 ? "volume" : "volumes",
                                     Quoted(host_paths)));
  }
  if (!host_ports.empty()) {
    violations.push_back(fmt::format("hostPort ({})", fmt::join(host_ports, ", ")));
  }
  if (At(At(At(spec, "securityContext"), "seccompProfile"), "type") == "Unconfined") {
    violations.push_back(
        "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")");
  }
}

void Restricted(const nlohmann::json& spec, std::vector<std::string>& violations) {
  std::vector<std::string> volume_types;
  const nlohmann::json& volumes = At(spec, "volumes");
  if (volumes.is_array()) {
    for (const nlohmann::json& volume : volumes) {
      if (!volume.is_object()) continue;
      for (const auto& [key, value] : volume.items()) {
        if (key != "name" && !kRestrictedVolumes.contains(key)) {
          volume_types.push_back(fmt::format("volume \"{}\" uses restricted volume type \"{}\"",
                                             volume.value("name", ""), key));
        }
      }
    }
  }
  if (!volume_types.empty()) {
    violations.push_back(
        fmt::format("restricted volume types ({})", fmt::join(volume_types, ", ")));
  }
  const nlohmann::json& pod_context = At(spec, "securityContext");
  const bool pod_non_root = IsTrue(At(pod_context, "runAsNonRoot"));
  const std::string pod_seccomp = At(At(pod_context, "seccompProfile"), "type").is_string()
                                      ? pod_context["seccompProfile"]["type"].get<std::string>()
                                      : "";
  const bool pod_seccomp_set = pod_seccomp == "RuntimeDefault" || pod_seccomp == "Localhost";
  std::vector<std::string> escalation;
  std::vector<std::string> non_root;
  std::vector<std::string> seccomp;
  std::vector<std::string> capabilities;
  bool root_user = At(pod_context, "runAsUser") == 0;
  for (const nlohmann::json* container : Containers(spec)) {
    const std::string name = At(*container, "name").is_string() ? (*container)["name"] : "";
    const nlohmann::json& context = At(*container, "securityContext");
    if (At(context, "allowPrivilegeEscalation") != false) escalation.push_back(name);
    const nlohmann::json& container_non_root = At(context, "runAsNonRoot");
    if (container_non_root == false || (!pod_non_root && container_non_root != true)) {
      non_root.push_back(name);
    }
    root_user = root_user || At(context, "runAsUser") == 0;
    const nlohmann::json& type = At(At(context, "seccompProfile"), "type");
    const bool set = type == "RuntimeDefault" || type == "Localhost";
    if (!(set || (pod_seccomp_set && type.is_null()))) seccomp.push_back(name);
    const nlohmann::json& caps = At(context, "capabilities");
    bool drops_all = false;
    if (At(caps, "drop").is_array()) {
      for (const nlohmann::json& dropped : caps["drop"]) drops_all = drops_all || dropped == "ALL";
    }
    bool adds_only_bind = true;
    if (At(caps, "add").is_array()) {
      for (const nlohmann::json& added : caps["add"]) {
        adds_only_bind = adds_only_bind && added == "NET_BIND_SERVICE";
      }
    }
    if (!drops_all || !adds_only_bind) capabilities.push_back(name);
  }
  if (!escalation.empty()) {
    violations.push_back(
        fmt::format("allowPrivilegeEscalation != false ({} must set "
                    "securityContext.allowPrivilegeEscalation=false)",
                    ContainersPhrase(escalation)));
  }
  if (!capabilities.empty()) {
    violations.push_back(
        fmt::format("unrestricted capabilities ({} must set "
                    "securityContext.capabilities.drop=[\"ALL\"])",
                    ContainersPhrase(capabilities)));
  }
  if (!non_root.empty()) {
    violations.push_back(
        fmt::format("runAsNonRoot != true (pod or {} must set securityContext.runAsNonRoot=true)",
                    ContainersPhrase(non_root)));
  }
  if (root_user)
    violations.emplace_back("runAsUser=0 (pod and containers must not set runAsUser=0)");
  if (!seccomp.empty()) {
    violations.push_back(
        fmt::format("seccompProfile (pod or {} must set "
                    "securityContext.seccompProfile.type to \"RuntimeDefault\" "
                    "or \"Localhost\")",
                    ContainersPhrase(seccomp)));
  }
}

}  // namespace

void EnforcePodSecurity(const nlohmann::json& ns, const nlohmann::json& pod) {
  const nlohmann::json& level =
      At(At(At(ns, "metadata"), "labels"), "pod-security.kubernetes.io/enforce");
  if (level != "baseline" && level != "restricted") return;  // privileged, or no label
  const nlohmann::json& spec = At(pod, "spec");
  std::vector<std::string> violations;
  Baseline(spec, violations);
  if (level == "restricted") Restricted(spec, violations);
  if (violations.empty()) return;
  const std::string name = At(pod, "metadata").value("name", "");
  throw ApiError(403, "Forbidden",
                 fmt::format("pods \"{}\" is forbidden: violates PodSecurity \"{}:latest\": {}",
                             name, level.get<std::string>(), fmt::join(violations, ", ")),
                 {{"name", name}, {"kind", "pods"}});
}

}  // namespace autodist::k8s
