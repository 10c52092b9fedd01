// The job's ConfigMap <job>-autodist, mounted in every pod: the manifest the runtime reads
// (job.yaml), the compiled Strategy, the ResourceSpec it was compiled against and a human
// summary. Nothing in it depends on the restart generation: each pod's arguments carry the
// addresses of its own gang (pod.h), so one ConfigMap serves every gang.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "operator/reconcile/compile.h"
#include "operator/reconcile/job_object.h"
#include "operator/reconcile/options.h"
#include "runtime/job/job_spec.h"

namespace autodist::reconcile {

// The manifest as the pods read it: the parsed job written back by job::JobToYaml (defaults
// spelled out, so the runtime and the operator cannot disagree; relative paths resolved against
// the working directory) and a ConfigMap model replaced by the file where the pod mounts it.
std::string PodManifest(const job::JobSpec& job, const ReconcilerOptions& options);

// True when a pod must run with --resume. Pods that start from where earlier pods of the job
// stopped (after a gang restart or a resume) must continue from the latest checkpoint, even when
// spec.training.checkpoint.resume is false (which only keeps the *first* start from picking up
// older checkpoints). A flag rather than a second manifest keeps the ConfigMap small.
bool ForcesResume(const job::JobSpec& job, bool continuing);

// What the API server stores at most in a ConfigMap's (or Secret's) values, data and binaryData
// together: 1 MiB (a 422 beyond it).
inline constexpr size_t kMaxConfigMapBytes = 1024 * 1024;

// The ConfigMap <job>-autodist. Throws autodist::Error (kInvalidArgument) naming the size of each
// key when its values would pass kMaxConfigMapBytes, so the job fails before the API server
// refuses it.
nlohmann::json BuildConfigMap(const JobRef& ref, const job::JobSpec& job,
                              const CompiledJob& compiled, const ReconcilerOptions& options);

}  // namespace autodist::reconcile
