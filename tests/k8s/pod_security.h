// Pod Security Admission, the admission plugin built into the real API server: a pod created in
// a namespace labelled pod-security.kubernetes.io/enforce=baseline or restricted must meet that
// level of the Pod Security Standards, else the create is refused (403 Forbidden) with the
// plugin's message: `pods "p" is forbidden: violates PodSecurity "restricted:latest": ...`.
// The checks are those of the fields a job's pods can carry: host namespaces, privileged,
// capabilities, hostPath volumes, host ports and seccomp (baseline); volume types, privilege
// escalation, running as non-root, runAsUser 0, seccomp set, capabilities dropped (restricted).
// AppArmor, SELinux, /proc mount and sysctl checks are not modelled.
#pragma once

#include <nlohmann/json.hpp>

namespace autodist::k8s {

// Throws ApiError 403 when `pod` breaks the level `ns` (the Namespace object, or null) enforces.
void EnforcePodSecurity(const nlohmann::json& ns, const nlohmann::json& pod);

}  // namespace autodist::k8s
