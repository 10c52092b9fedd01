// The steps of Reconcile (reconciler.cc), one file each: compiling, finishing and tidying up,
// and creating the children. Internal to operator/reconcile.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "operator/reconcile/compile.h"
#include "operator/reconcile/job_object.h"
#include "operator/reconcile/job_status.h"
#include "operator/reconcile/members.h"
#include "operator/reconcile/observed_pods.h"
#include "operator/reconcile/reconciler.h"
#include "operator/reconcile/status_recorder.h"

namespace autodist::reconcile::detail {

// Everything one reconcile reads and changes.
struct Context {
  const Observed& observed;
  const ReconcilerOptions& options;
  const JobRef& ref;
  JobStatus& status;
  StatusRecorder& record;
  Plan& plan;
};

// Deletes `pod` unless it is being deleted already.
void DeletePod(Context& context, const ObservedPod& pod);

// compile_step.cc. kReady: the Strategy is compiled, and `config_map` is the ConfigMap to
// create whenever the job's does not exist yet. kWaiting: the model is not there yet (Compiled
// False, ModelNotFound; requeued). kFailed: the model or the compile failed for good (or the
// ConfigMap would be too large) and the job is Failed.
enum class CompileOutcome { kReady, kWaiting, kFailed };
CompileOutcome EnsureCompiled(Context& context, const job::JobSpec& job,
                              const std::vector<ObservedPod>& pods, ModelSource& models,
                              std::optional<nlohmann::json>& config_map);

// finish_step.cc. Marks the job Succeeded (empty `reason`) or Failed with `reason`, sets the
// completion time, then tidies up as for every finished job.
void Finish(Context& context, const job::JobSpec& job, const std::vector<ObservedPod>& pods,
            const std::string& reason, const std::string& message);
// For a finished job: deletes pods as cleanPodPolicy says (and every active pod of a job that
// failed FailedCreate or past its deadline), deletes the PodGroup, and deletes the job once
// ttlSecondsAfterFinished ran out.
void TidyFinished(Context& context, const job::JobSpec& job, const std::vector<ObservedPod>& pods);

// children_step.cc. Creates the missing children: `config_map` (EnsureCompiled's), Service,
// PodGroup and the pods of restart generation `generation` (`members`), and deletes the pods of
// earlier generations, without waiting for them to go: their names are not the new pods'.
void PlanChildren(Context& context, const job::JobSpec& job, const JobMembers& members,
                  const std::optional<nlohmann::json>& config_map,
                  const std::vector<ObservedPod>& pods, int generation, bool continuing);

}  // namespace autodist::reconcile::detail
