// The end of a job: its terminal condition, then clean-up by cleanPodPolicy and deletion after
// ttlSecondsAfterFinished, repeated (idempotently) on every reconcile of the finished job.
#include <fmt/format.h>

#include "operator/reconcile/object_meta.h"
#include "operator/reconcile/reconcile_steps.h"
#include "operator/reconcile/time_format.h"

namespace autodist::reconcile::detail {
namespace {

void DeletePodGroup(Context& context) {
  const std::optional<nlohmann::json>& group = context.observed.pod_group;
  if (!group.has_value() || !IsControlledBy(*group, context.ref)) return;
  const nlohmann::json metadata = group->value("metadata", nlohmann::json::object());
  if (!metadata.value("deletionTimestamp", nlohmann::json()).is_null()) return;
  context.plan.deletes.push_back(ObjectRef{group->value("apiVersion", ""),
                                           group->value("kind", "PodGroup"),
                                           metadata.value("name", ""), metadata.value("uid", "")});
}

void ApplyTtl(Context& context, const job::JobSpec& job) {
  const std::optional<int32_t> ttl = job.run_policy.ttl_seconds_after_finished;
  const std::optional<TimePoint> completed = ParseRfc3339(context.status.completion_time);
  if (!ttl.has_value() || !completed.has_value()) return;
  const TimePoint expiry = *completed + std::chrono::seconds(*ttl);
  if (context.observed.now >= expiry) {
    context.plan.delete_job = true;
    context.record.Announce(kEventNormal, kReasonTtlExpired,
                            fmt::format("deleting the job {} s after it finished (spec.runPolicy."
                                        "ttlSecondsAfterFinished)",
                                        *ttl));
  } else {
    context.plan.RequeueAfter(SecondsUntil(context.observed.now, expiry));
  }
}

}  // namespace

void DeletePod(Context& context, const ObservedPod& pod) {
  if (pod.terminating) return;
  context.plan.deletes.push_back(ObjectRef{"v1", "Pod", pod.name, pod.uid});
}

void Finish(Context& context, const job::JobSpec& job, const std::vector<ObservedPod>& pods,
            const std::string& reason, const std::string& message) {
  if (reason.empty()) {
    context.record.Succeeded(message);
  } else {
    context.record.Failed(reason, message);
  }
  if (context.status.completion_time.empty()) {
    context.status.completion_time = context.record.now();
  }
  TidyFinished(context, job, pods);
}

void TidyFinished(Context& context, const job::JobSpec& job, const std::vector<ObservedPod>& pods) {
  const Condition* failed = context.status.Find(kFailed);
  // Past its deadline a job must stop using its resources, whatever cleanPodPolicy keeps; so
  // must a gang that lacks a member the API server refused, whose pods could only wait for it.
  const bool stop_active =
      failed != nullptr && failed->status == "True" &&
      (failed->reason == kReasonDeadlineExceeded || failed->reason == kReasonFailedCreate);
  const job::CleanPodPolicy policy = job.run_policy.clean_pod_policy;
  for (const ObservedPod& pod : pods) {
    const bool clean = policy == job::CleanPodPolicy::kAll ||
                       ((policy == job::CleanPodPolicy::kRunning || stop_active) && pod.Active());
    if (clean) DeletePod(context, pod);
  }
  // The gang is gone or going: the scheduler should not keep reserving room for it.
  DeletePodGroup(context);
  ApplyTtl(context, job);
}

}  // namespace autodist::reconcile::detail
