#include "operator/app/plan_executor.h"

#include <fmt/format.h>

#include <cctype>

#include "operator/kube/api_error.h"
#include "operator/kube/resource.h"
#include "operator/reconcile/names.h"
#include "operator/reconcile/object_meta.h"
#include "operator/reconcile/observed_fields.h"
#include "runtime/common/error.h"

namespace autodist::app {

kube::Resource ResourceOfApiVersion(const std::string& api_version, const std::string& kind) {
  AD_CHECK(kind == "Pod" || kind == "Service" || kind == "ConfigMap" || kind == "PodGroup" ||
               kind == "NetworkPolicy" || kind == "Secret" || kind == "Event",
           kInternal, "the operator does not manage objects of kind '{}'", kind);
  kube::Resource resource;
  const size_t slash = api_version.find('/');
  if (slash != std::string::npos) {
    resource.group = api_version.substr(0, slash);
    resource.version = api_version.substr(slash + 1);
  } else {
    resource.version = api_version;
  }
  resource.kind = kind;
  resource.plural.reserve(kind.size() + 2);
  for (const char c : kind) {
    resource.plural += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  // NetworkPolicy -> networkpolicies.
  if (resource.plural.back() == 'y') {
    resource.plural.back() = 'i';
    resource.plural += "es";
  } else {
    resource.plural += 's';
  }
  resource.namespaced = true;
  return resource;
}

ExecuteResult PlanExecutor::Execute(const nlohmann::json& job, const reconcile::Plan& plan) {
  const std::string ns = job.at("metadata").value("namespace", "default");
  const std::string name = job.at("metadata").at("name").get<std::string>();
  ExecuteResult result;
  if (plan.status.has_value()) {
    // The status subresource takes only the status (and the resourceVersion for optimistic
    // concurrency) from the body and keeps the rest as stored, so the spec is not sent: the
    // job's identity and metadata, and the new status.
    nlohmann::json updated = reconcile::SlimToMetadata(job);
    updated["status"] = *plan.status;
    try {
      const nlohmann::json written = client_.UpdateStatus(kube::resources::kAutoDistJobs, updated);
      result.status_resource_version =
          written.value("/metadata/resourceVersion"_json_pointer, std::string());
    } catch (const std::exception& e) {
      if (kube::IsConflict(e)) {
        result.outcome = ExecuteOutcome::kConflict;
        return result;
      }
      if (kube::IsNotFound(e)) return result;  // deleted meanwhile
      throw;
    }
  }
  for (const reconcile::ObjectRef& ref : plan.deletes) {
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    if (!ref.uid.empty()) options.precondition_uid = ref.uid;
    try {
      client_.Delete(ResourceOfApiVersion(ref.api_version, ref.kind), ns, ref.name, options);
    } catch (const std::exception& e) {
      // Gone already, or replaced by a newer object the uid precondition protects.
      if (!kube::IsNotFound(e) && !kube::IsConflict(e)) throw;
    }
  }
  for (const nlohmann::json& object : plan.creates) {
    const kube::Resource resource = ResourceOfApiVersion(object.at("apiVersion").get<std::string>(),
                                                         object.at("kind").get<std::string>());
    try {
      client_.Create(resource, object.at("metadata").value("namespace", ns), object);
    } catch (const kube::ApiError& e) {
      const std::string child = object.at("metadata").value("name", "");
      if (kube::IsAlreadyExists(e)) {
        // Ours, made by an earlier plan the cache has not caught up with; or a holder of the
        // name that must not stand in for the job's child.
        result.rejection = NameHolder(job, resource, ns, child, e);
      } else if (reconcile::IsRejectionCode(e.http_code())) {
        const std::string message = e.status().message.empty() ? e.what() : e.status().message;
        result.rejection = reconcile::Rejection{
            resource.kind, child,   e.http_code(),
            e.reason(),    message, reconcile::RefusalMayClear(e.http_code(), message)};
      } else if (kube::IsNotFound(e) && resource.kind == "PodGroup") {
        // The gang scheduler's PodGroup kind is not served: its CRD is not installed (yet). The
        // job waits, saying so, and is admitted once it is.
        const std::string message = e.status().message.empty() ? e.what() : e.status().message;
        result.rejection = reconcile::Rejection{
            resource.kind,
            child,
            e.http_code(),
            e.reason(),
            fmt::format("{}: the API server serves no {} PodGroups; the operator's gang "
                        "scheduling needs its scheduler and CRD installed",
                        message, object.at("apiVersion").get<std::string>()),
            true};
      } else {
        throw;
      }
      // The gang needs every child: the rest would only be refused alike, or wait for this one.
      if (result.rejection.has_value()) break;
    }
  }
  if (plan.delete_job) {
    kube::DeleteOptions options;
    options.propagation_policy = "Background";  // the garbage collector removes the children
    options.precondition_uid = job.at("metadata").value("uid", "");
    try {
      client_.Delete(kube::resources::kAutoDistJobs, ns, name, options);
    } catch (const std::exception& e) {
      if (!kube::IsNotFound(e) && !kube::IsConflict(e)) throw;
    }
  }
  for (const reconcile::Event& event : plan.events) events_.Record(job, event);
  return result;
}

std::optional<reconcile::Rejection> PlanExecutor::NameHolder(const nlohmann::json& job,
                                                             const kube::Resource& resource,
                                                             const std::string& ns,
                                                             const std::string& name,
                                                             const kube::ApiError& exists) {
  nlohmann::json holder;
  try {
    holder = client_.Get(resource, ns, name);
  } catch (const std::exception& e) {
    // Gone since the create: the next attempt takes the name.
    if (kube::IsNotFound(e)) throw exists;
    throw;
  }
  const reconcile::JobRef ref = reconcile::ReadJobRef(job);
  if (reconcile::IsControlledBy(holder, ref)) return std::nullopt;
  reconcile::Rejection taken{resource.kind, name, exists.http_code(), exists.reason(), ""};
  const nlohmann::json& metadata = holder.at("metadata");
  nlohmann::json controller = nlohmann::json::object();
  for (const nlohmann::json& owner : metadata.value("ownerReferences", nlohmann::json::array())) {
    if (owner.is_object() && owner.value("controller", false)) controller = owner;
  }
  const std::string held_by =
      controller.empty()
          ? std::string("has no controller")
          : fmt::format("is controlled by {} {} (uid {})", controller.value("kind", ""),
                        controller.value("name", ""), controller.value("uid", ""));
  if (!metadata.value("deletionTimestamp", nlohmann::json()).is_null()) {
    taken.may_clear = true;
    taken.message = fmt::format(
        "{} {} already exists, {}, and is being deleted; waiting for it "
        "to go",
        resource.kind, name, held_by);
  } else if (controller.value("kind", "") == reconcile::kJobKind &&
             controller.value("name", "") == ref.name) {
    // Names are unique in a namespace: a job of this name with another uid was deleted, and the
    // garbage collector removes its children in its own time.
    taken.may_clear = true;
    taken.message = fmt::format(
        "{} {} already exists and {}, an earlier job of this name that "
        "was deleted; waiting for the garbage collector to remove it",
        resource.kind, name, held_by);
  } else {
    taken.message = fmt::format(
        "{} {} already exists and {}, not by this job (uid {}); delete "
        "it or give the job another name",
        resource.kind, name, held_by, ref.uid);
  }
  return taken;
}

}  // namespace autodist::app
