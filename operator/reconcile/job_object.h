// The AutoDistJob object as the API server returns it (JSON): its identity, and its manifest
// parsed by the shared job parser (runtime/job) plus the few rules only the operator has.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "operator/reconcile/options.h"
#include "runtime/job/job_spec.h"

namespace autodist::reconcile {

// What the children's names, owner references and conditions need of the job object.
struct JobRef {
  std::string name;
  std::string namespace_name;  // "default" when the object has none
  std::string uid;
  int64_t generation = 0;
  bool deleting = false;  // metadata.deletionTimestamp is set: garbage collection takes over
};

// Throws InvalidArgument when the object has no metadata.name (not an object the API returns).
JobRef ReadJobRef(const nlohmann::json& object);

// Parses the object's manifest with job::ParseJob. Relative paths resolve against the runtime
// container's working directory (options.working_dir), where the pods will see them. Beyond the
// parser's rules, the pod names must be DNS labels (a pod's hostname is its name). Throws
// InvalidArgument with the parser's message, minus the "<source>:<line>: " prefix that would
// point into the operator's re-serialized JSON rather than anything the user wrote; the message
// starts with the YAML path of the field.
job::JobSpec ParseJobObject(const nlohmann::json& object, const ReconcilerOptions& options);

}  // namespace autodist::reconcile
