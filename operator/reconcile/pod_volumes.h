// Where the runtime container may write. Its root filesystem is read-only (the restricted pod of
// docs/security.md), so every directory it writes in is a volume: /tmp, /dev/shm (in memory, for
// NCCL's shared-memory transport), and the directories the manifest names for its output
// (checkpoints, timeline, TensorBoard, the exported model). Each is an emptyDir, unless a volume of
// the pod template is already mounted there or above it (a persistentVolumeClaim the user gives
// for checkpoints, say): an emptyDir lives only as long as its pod.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/reconcile/options.h"
#include "runtime/job/job_spec.h"

namespace autodist::reconcile {

struct OutputDirectory {
  std::string field;  // "spec.training.checkpoint.path"
  std::string path;   // as the runtime sees it in the pod
};

// The directories the manifest's output goes to. The operator's job was parsed with the runtime
// container's working directory as its manifest directory (job_object.cc), so relative paths are
// already resolved the way the runtime resolves them.
std::vector<OutputDirectory> OutputDirectories(const job::JobSpec& job);

// Adds an emptyDir volume and its mount to container `container` of `pod_spec` for each of
// options' scratch paths (/tmp, /dev/shm as medium Memory) and each output directory that no
// mount of that container covers. Returns the output directories it gave an emptyDir, so that
// the job can be told they do not outlive their pods.
std::vector<OutputDirectory> AddWritableVolumes(nlohmann::json& pod_spec,
                                                const std::string& container,
                                                const job::JobSpec& job,
                                                const ReconcilerOptions& options);

}  // namespace autodist::reconcile
