#include "operator/reconcile/pod_group.h"

#include "operator/reconcile/names.h"
#include "operator/reconcile/object_meta.h"

namespace autodist::reconcile {

bool UsesPodGroup(const job::JobSpec& job, GangScheduler scheduler) {
  return scheduler != GangScheduler::kNone && job.run_policy.scheduling_policy.has_value();
}

const char* PodGroupApiVersion(GangScheduler scheduler) {
  return scheduler == GangScheduler::kVolcano ? "scheduling.volcano.sh/v1beta1"
                                              : "scheduling.x-k8s.io/v1alpha1";
}

nlohmann::json BuildPodGroup(const JobRef& ref, const job::JobSpec& job, GangScheduler scheduler) {
  const job::SchedulingPolicy& policy = *job.run_policy.scheduling_policy;
  nlohmann::json spec = {{"minMember", job.resources.workers + job.resources.parameter_servers}};
  if (scheduler == GangScheduler::kVolcano) {
    if (!policy.queue.empty()) spec["queue"] = policy.queue;
    if (!policy.priority_class.empty()) spec["priorityClassName"] = policy.priority_class;
  } else if (policy.schedule_timeout_seconds.has_value()) {
    spec["scheduleTimeoutSeconds"] = *policy.schedule_timeout_seconds;
  }
  return {{"apiVersion", PodGroupApiVersion(scheduler)},
          {"kind", "PodGroup"},
          {"metadata", ChildMetadata(ref, PodGroupName(ref.name))},
          {"spec", std::move(spec)}};
}

void AddPodGroupMembership(nlohmann::json& pod_metadata, const std::string& pod_group,
                           GangScheduler scheduler) {
  if (scheduler == GangScheduler::kVolcano) {
    pod_metadata["annotations"]["scheduling.k8s.io/group-name"] = pod_group;
  } else if (scheduler == GangScheduler::kSchedulerPlugins) {
    pod_metadata["labels"]["scheduling.x-k8s.io/pod-group"] = pod_group;
  }
}

}  // namespace autodist::reconcile
