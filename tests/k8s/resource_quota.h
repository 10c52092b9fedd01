// ResourceQuota admission, as the real API server's plugin evaluates a pod create: every
// ResourceQuota of the pod's namespace constrains the resources its spec.hard names (pods,
// count/pods, cpu, memory, requests.* and limits.*, extended resources as requests.<name>).
// A quota that constrains a compute resource requires every container to set it ("failed quota:
// q: must specify limits.cpu for: main; ..."); one whose hard limit the pod would pass, counting
// the namespace's pods that have not ended, refuses it ("exceeded quota: q, requested: pods=1,
// used: pods=3, limited: pods=3"). Both are 403 Forbidden, with the plugin's words. The quota's
// status.used is not maintained, and LimitRanges (which would default the missing values) are
// not modelled.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace autodist::k8s {

// A Kubernetes quantity ("500m", "1.5", "4Gi", "1e3", "2k") as a number of base units (cores,
// bytes); nullopt when `text` is not one.
std::optional<long double> ParseQuantity(const std::string& text);

// Throws ApiError 403 when creating `pod` breaks one of `quotas` (the namespace's ResourceQuota
// objects), given the namespace's existing `pods`.
void EnforceResourceQuotas(const std::vector<nlohmann::json>& quotas,
                           const std::vector<nlohmann::json>& pods, const nlohmann::json& pod);

}  // namespace autodist::k8s
