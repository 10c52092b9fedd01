// Structural-schema handling of custom objects, as the API server applies a CRD's
// openAPIV3Schema: defaulting, pruning of unknown fields, and the value checks that need no CEL
// (type, required, enum, minimum/maximum, min/max length and items, pattern, nullable,
// x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields). oneOf/anyOf/allOf/not,
// format and x-kubernetes-validations (CEL) are not checked.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace autodist::k8s {

struct SchemaReport {
  // One metav1.StatusCause per violation: {reason, message, field}.
  std::vector<nlohmann::json> causes;
  // Dotted paths of the fields that were pruned ("spec.foo"), for strict field validation.
  std::vector<std::string> unknown_fields;
};

// Applies `schema` (the CRD version's openAPIV3Schema) to the whole custom object in place.
// apiVersion, kind and metadata are left to the generic object-meta rules.
SchemaReport ApplySchema(const nlohmann::json& schema, nlohmann::json& object);

}  // namespace autodist::k8s
