// Reading an AutoDistJob manifest: the one parser and validator that the launcher, the operator
// and the runtime share. Every error is an autodist::Error (InvalidArgument; NotFound for a
// missing manifest file) whose message names the manifest, the line and the YAML path of the
// field, and what was expected:
//   job.yaml:12: spec.resources.workers: expected an integer >= 1, got "two"
//   job.yaml:20: spec.training.optimizr: unknown field (expected one of: epochs, steps, ...)
// docs/job-reference.md lists every field with its type, default and constraints.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "runtime/job/job_spec.h"

namespace autodist::job {

// Parses and validates a manifest (YAML, or JSON as the API server returns it). `source` names it
// in messages (usually the file path). Relative paths in the manifest are resolved against
// `manifest_dir` (made absolute first); an empty `manifest_dir` leaves them as written. Files are
// not opened: whether they exist is checked when they are used.
JobSpec ParseJob(const std::string& yaml_text, const std::string& source,
                 const std::string& manifest_dir);

// The same for an object already parsed from JSON (the operator's cached AutoDistJob), without
// writing it out and reading it back. Messages have no line numbers (there are no lines).
JobSpec ParseJobJson(const nlohmann::json& object, const std::string& source,
                     const std::string& manifest_dir);

// Reads and parses the manifest at `path`; relative paths resolve against its directory.
JobSpec LoadJobFile(const std::string& path);

}  // namespace autodist::job
