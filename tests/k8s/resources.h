// The REST resources the test double serves: the built-in ones the operator and kubectl use, and
// one entry per served version of every registered CustomResourceDefinition.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace autodist::k8s {

struct ResourceInfo {
  std::string group;  // "" for the core group
  std::string version;
  std::string plural;
  std::string singular;
  std::string kind;
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  bool has_status = false;  // serves the /status subresource
  bool is_custom = false;   // defined by a CRD
  bool storage = true;      // the version objects are stored in (CRDs with several versions)
  nlohmann::json schema;    // CRD openAPIV3Schema; null when none
  nlohmann::json printer_columns = nlohmann::json::array();  // CRD additionalPrinterColumns
  std::vector<std::string> selectable_fields;  // field selectors beyond metadata.name/namespace

  // Storage key shared by all versions: "pods", "autodistjobs.autodist.io".
  std::string Key() const { return group.empty() ? plural : plural + "." + group; }
  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // "Pod", "AutoDistJob.autodist.io": how Invalid messages name the kind.
  std::string QualifiedKind() const { return group.empty() ? kind : kind + "." + group; }
};

// The built-in resources: core v1 (pods, services, configmaps, secrets, serviceaccounts, events,
// endpoints, namespaces, nodes), coordination.k8s.io/v1 leases and
// apiextensions.k8s.io/v1 customresourcedefinitions.
std::vector<ResourceInfo> BuiltinResources();

// The resources a CustomResourceDefinition defines (one per served version). Throws ApiError
// (422 Invalid) naming the field when the CRD lacks what serving it needs.
std::vector<ResourceInfo> ResourcesFromCrd(const nlohmann::json& crd);

// Fills the status the real server reports once a CRD is served (Established, NamesAccepted,
// acceptedNames, storedVersions).
void SetCrdStatus(nlohmann::json& crd);

}  // namespace autodist::k8s
