// Metadata shared by every child of a job: the owner reference that makes the job its
// controller (garbage collection deletes children with the job; the API server refuses a second
// controller) and the labels that find them again.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "operator/reconcile/job_object.h"

namespace autodist::reconcile {

// {apiVersion: autodist.io/v1alpha1, kind: AutoDistJob, name, uid, controller: true,
//  blockOwnerDeletion: true}
nlohmann::json OwnerReference(const JobRef& job);

// {autodist.io/job-name: <job>, app.kubernetes.io/managed-by: autodist-operator}
nlohmann::json JobLabels(const JobRef& job);

// metadata of a child named `name` in the job's namespace: `extra_labels` with JobLabels over
// them, and the owner reference.
nlohmann::json ChildMetadata(const JobRef& job, const std::string& name,
                             const nlohmann::json& extra_labels = nlohmann::json::object());

// True when `object`'s controller owner reference is `job` (by uid; by name when the job has no
// uid, as in objects built without an API server).
bool IsControlledBy(const nlohmann::json& object, const JobRef& job);

}  // namespace autodist::reconcile
