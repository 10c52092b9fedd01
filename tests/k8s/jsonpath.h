// The subset of Kubernetes JSONPath that CRD additionalPrinterColumns use: `.a.b`, `['a.b']`,
// `[0]`, `[*]`, `.*` and filters `[?(@.type=="Ready")]` / `[?(@.x)]`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace autodist::k8s {

// Every node `path` selects in `root`, in document order. Throws ApiError (400) on a path
// outside the supported subset.
std::vector<const nlohmann::json*> EvaluateJsonPath(const nlohmann::json& root,
                                                    const std::string& path);

}  // namespace autodist::k8s
