#include "operator/reconcile/object_meta.h"

#include "operator/reconcile/names.h"

namespace autodist::reconcile {

nlohmann::json OwnerReference(const JobRef& job) {
  return {{"apiVersion", kJobApiVersion},
          {"kind", kJobKind},
          {"name", job.name},
          {"uid", job.uid},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

nlohmann::json JobLabels(const JobRef& job) {
  return {{kJobNameLabel, job.name}, {kManagedByLabel, kManagedByValue}};
}

nlohmann::json ChildMetadata(const JobRef& job, const std::string& name,
                             const nlohmann::json& extra_labels) {
  // The job's labels last: the operator finds its children by them, so nothing overrides them.
  nlohmann::json labels = extra_labels.is_object() ? extra_labels : nlohmann::json::object();
  const nlohmann::json job_labels = JobLabels(job);
  for (const auto& [key, value] : job_labels.items()) labels[key] = value;
  return {{"name", name},
          {"namespace", job.namespace_name},
          {"labels", std::move(labels)},
          {"ownerReferences", nlohmann::json::array({OwnerReference(job)})}};
}

bool IsControlledBy(const nlohmann::json& object, const JobRef& job) {
  const nlohmann::json* owners = nullptr;
  if (const auto metadata = object.find("metadata"); metadata != object.end()) {
    if (const auto found = metadata->find("ownerReferences");
        found != metadata->end() && found->is_array()) {
      owners = &*found;
    }
  }
  if (owners == nullptr) return false;
  for (const nlohmann::json& owner : *owners) {
    if (!owner.is_object() || !owner.value("controller", false)) continue;
    if (owner.value("kind", "") != kJobKind) return false;
    return job.uid.empty() ? owner.value("name", "") == job.name
                           : owner.value("uid", "") == job.uid;
  }
  return false;
}

}  // namespace autodist::reconcile
