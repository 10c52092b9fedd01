// Resource descriptors: what the generic client needs to build a REST path for a kind (group,
// version, plural, scope), plus the descriptors of the kinds the operator touches.
#pragma once

#include <string>

namespace autodist::kube {

struct Resource {
  std::string group;  // "" for the core ("legacy") group
  std::string version;
  std::string plural;
  std::string kind;
  bool namespaced = true;

  // "v1" for the core group, "group/version" otherwise: what objects carry as apiVersion.
  std::string ApiVersion() const;
  // "pods", "leases.coordination.k8s.io": how kubectl and messages name the resource.
  std::string Name() const;
  // The collection or object path: /api/v1/namespaces/NS/pods[/NAME[/SUBRESOURCE]], or the
  // cluster-wide collection (/api/v1/pods) when `ns` is empty. Names are percent-encoded.
  std::string Path(const std::string& ns, const std::string& name = "",
                   const std::string& subresource = "") const;
};

// The kinds the operator reads and writes.
namespace resources {

inline const Resource kPods{"", "v1", "pods", "Pod", true};
inline const Resource kServices{"", "v1", "services", "Service", true};
inline const Resource kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
inline const Resource kSecrets{"", "v1", "secrets", "Secret", true};
inline const Resource kEvents{"", "v1", "events", "Event", true};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
inline const Resource kAutoDistJobs{"autodist.io", "v1alpha1", "autodistjobs", "AutoDistJob", true};
inline const Resource kNetworkPolicies{"networking.k8s.io", "v1", "networkpolicies",
                                       "NetworkPolicy", true};
// Gang scheduling through the coscheduling plugin (kubernetes-sigs/scheduler-plugins).
inline const Resource kPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true};

}  // namespace resources

}  // namespace autodist::kube
