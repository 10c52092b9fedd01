// YAML (kubectl manifests, server-side apply bodies) to JSON, the way the API server reads it:
// plain scalars that spell numbers, booleans or null become those; quoted ones stay strings.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace autodist::k8s {

// Every document of a multi-document YAML text ("---" separated), empty ones skipped. Throws
// autodist::Error (kInvalidArgument) naming the parse error.
std::vector<nlohmann::json> ParseYamlDocuments(const std::string& text);

}  // namespace autodist::k8s
