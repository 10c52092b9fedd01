// Discovery and OpenAPI documents generated from the resource registry: /api, /apis (legacy and
// aggregated apidiscovery.k8s.io/v2[beta1]), /api/v1, /apis/<g>[/<v>], /version, and the
// OpenAPI v3 index and group-version documents kubectl consults before `apply` (to learn that
// the server supports the fieldValidation parameter) and for `kubectl explain` of CRDs.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/k8s/resources.h"

namespace autodist::k8s {

// Versions sorted the way the API server ranks them: GA, beta, alpha, then others.
bool VersionPriorityLess(const std::string& a, const std::string& b);

nlohmann::json VersionDocument();
nlohmann::json LegacyApiVersions(const std::string& server_address);
nlohmann::json LegacyGroupList(const std::vector<ResourceInfo>& resources);
// nullopt when no resource of `group` is served.
std::optional<nlohmann::json> LegacyGroup(const std::vector<ResourceInfo>& resources,
                                          const std::string& group);
std::optional<nlohmann::json> ResourceList(const std::vector<ResourceInfo>& resources,
                                           const std::string& group, const std::string& version);
// Aggregated discovery for /api (`core` true) or /apis; `version` is v2 or v2beta1.
nlohmann::json AggregatedDiscovery(const std::vector<ResourceInfo>& resources, bool core,
                                   const std::string& version);

// /openapi/v3: {"paths": {"api/v1": {"serverRelativeURL": ...}, ...}}.
nlohmann::json OpenApiV3Index(const std::vector<ResourceInfo>& resources);
// /openapi/v3/<api/v1 | apis/g/v>; nullopt for an unknown group-version.
std::optional<nlohmann::json> OpenApiV3Document(const std::vector<ResourceInfo>& resources,
                                                const std::string& gv_path);

}  // namespace autodist::k8s
