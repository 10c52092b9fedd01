// Gang scheduling: one PodGroup per job (named after it) whose minMember is every pod of the
// job, so the scheduler starts all of them or none (a partly scheduled synchronous job would
// hold its resources and never take a step).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "operator/reconcile/job_object.h"
#include "operator/reconcile/options.h"
#include "runtime/job/job_spec.h"

namespace autodist::reconcile {

// True when the job's pods get a PodGroup: the operator has a gang scheduler and the job a
// spec.runPolicy.schedulingPolicy.
bool UsesPodGroup(const job::JobSpec& job, GangScheduler scheduler);

// apiVersion of the PodGroup kind of `scheduler` (scheduling.x-k8s.io/v1alpha1 or
// scheduling.volcano.sh/v1beta1).
const char* PodGroupApiVersion(GangScheduler scheduler);

// The PodGroup for a job that UsesPodGroup.
nlohmann::json BuildPodGroup(const JobRef& ref, const job::JobSpec& job, GangScheduler scheduler);

// What ties a pod to its PodGroup: the label scheduler-plugins reads, or the annotation Volcano
// reads; adds it to the pod's metadata.
void AddPodGroupMembership(nlohmann::json& pod_metadata, const std::string& pod_group,
                           GangScheduler scheduler);

}  // namespace autodist::reconcile
