// The PATCH content types the API server accepts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace autodist::k8s {

enum class PatchType { kJsonPatch, kMergePatch, kStrategicMergePatch, kApplyPatch };

// Maps a request's Content-Type to a patch type; throws ApiError (415) for others.
PatchType ParsePatchType(const std::string& content_type);

// RFC 6902 JSON patch; a failing operation (bad path, failed "test") is a 422 Invalid ApiError.
nlohmann::json ApplyJsonPatch(const nlohmann::json& target, const nlohmann::json& patch);

// RFC 7386 JSON merge patch.
nlohmann::json ApplyMergePatch(const nlohmann::json& target, const nlohmann::json& patch);

// Strategic merge patch, approximated without the Go type metadata: a merge patch in which
// lists with a well-known merge key (containers/env/volumes/... by name, ports by containerPort
// or port, volumeMounts by mountPath, conditions by type, ownerReferences by uid) merge element
// by element, metadata.finalizers merges as a set, and the directives $patch (replace/delete),
// $retainKeys and $deleteFromPrimitiveList/<field> are honoured. $setElementOrder/<field> is
// accepted and ignored: merged lists keep the live order with new elements appended.
nlohmann::json ApplyStrategicMergePatch(const nlohmann::json& target, const nlohmann::json& patch);

}  // namespace autodist::k8s
