// One pod of a job: <job>-worker-<i> or <job>-ps-<i>, running `autodist-runtime` as that member,
// alone or injected as a sidecar into the job's pod template.
#pragma once

#include <nlohmann/json.hpp>

#include "operator/reconcile/job_object.h"
#include "operator/reconcile/members.h"
#include "operator/reconcile/options.h"
#include "operator/reconcile/pod_volumes.h"
#include "runtime/job/job_spec.h"

namespace autodist::reconcile {

struct PodRequest {
  const JobRef& ref;
  const job::JobSpec& job;
  // spec.template of the job object as the API returned it (null: none), so the user's values
  // keep their JSON types.
  const nlohmann::json& pod_template;
  const JobMembers& members;
  const Member& member;
  int generation = 0;       // the restart generation (status.restartCount)
  bool continuing = false;  // continues earlier pods' training: resume from the checkpoint
  const ReconcilerOptions& options;
};

// The runtime container (autodist-runtime): command, args, env, port, resources, mounts.
nlohmann::json RuntimeContainer(const PodRequest& request);

// The pod; with `ephemeral`, also the manifest's output directories it had to put on an emptyDir
// (pod_volumes.h) because the template mounts no volume there.
nlohmann::json BuildPod(const PodRequest& request,
                        std::vector<OutputDirectory>* ephemeral = nullptr);

}  // namespace autodist::reconcile
