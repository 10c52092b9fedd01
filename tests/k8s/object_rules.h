// What the API server does to an object between the request body and storage: envelope and
// name checks, server-set metadata, the defaults kubectl users see, CRD schema handling,
// status-subresource isolation and the generation rule.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/k8s/resources.h"

namespace autodist::k8s {

enum class FieldValidation { kIgnore, kWarn, kStrict };

// Parses ?fieldValidation= (Strict, Warn, Ignore; empty means Warn, the server default).
FieldValidation ParseFieldValidation(const std::string& value);

// Checks the body's apiVersion/kind against the endpoint (filling them when absent), and its
// metadata.namespace against the URL's (filling it; cleared for cluster-scoped resources).
void CheckEnvelope(const ResourceInfo& r, const std::string& ns, nlohmann::json& body);

// 422 Invalid unless `name` is a valid object name for `r` (RFC 1123 subdomain, or label for
// namespaces and services).
void ValidateName(const ResourceInfo& r, const std::string& name);

// Server-set fields of a new object (uid, creationTimestamp, generation), the defaults of
// built-in kinds, the CRD status, and for custom objects the schema (defaults, pruning,
// validation). Unknown fields are errors (Strict) or `warnings` (Warn).
void PrepareForCreate(const ResourceInfo& r, nlohmann::json& object, FieldValidation validation,
                      std::vector<std::string>& warnings);

// Merges an update into `old`: for the main endpoint, status changes are ignored when the
// resource has a status subresource; for the status subresource, only status changes are kept.
// Server-owned metadata stays; the generation increments when anything outside metadata (and
// status) changes. 409 Conflict when the body's resourceVersion is set and stale. Returns false
// when the result equals `old` (a no-op update: no new resourceVersion, no event).
bool PrepareForUpdate(const ResourceInfo& r, const nlohmann::json& old, nlohmann::json& object,
                      bool status_subresource, FieldValidation validation,
                      std::vector<std::string>& warnings);

}  // namespace autodist::k8s
