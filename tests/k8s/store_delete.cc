// Deletion in the store: preconditions, graceful deletion of pods, finalizers, namespace and CRD
// teardown, and the garbage collector's cascade over ownerReferences: synchronously, under the
// store lock, unless a test holds it (HoldGarbageCollection) to see dependents outlive their
// owner, as the real cluster's asynchronous collector lets them.
#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <optional>

#include "tests/k8s/api_error.h"
#include "tests/k8s/clock.h"
#include "tests/k8s/pod_status.h"
#include "tests/k8s/store.h"

namespace autodist::k8s {
namespace {

constexpr int kMaxCascadeDepth = 64;  // ownerReference cycles are invalid; this stops them

std::string QualifiedResource(const ResourceInfo& r) { return r.Key(); }

// The grace period a deletion gives an object, as the API server's pod strategy decides it
// (CheckGracefulDelete): pods only; the request's, else spec.terminationGracePeriodSeconds
// (defaulted to 30 at creation); none for a pod that no node runs (unbound) or that has ended,
// since no kubelet would ever finish its deletion. A negative request counts as 1 s.
int64_t GracePeriod(const std::string& key, const nlohmann::json& object,
                    std::optional<int64_t> requested) {
  if (key != "pods") return 0;
  const nlohmann::json spec = object.value("spec", nlohmann::json::object());
  if (spec.value("nodeName", "").empty() || PodEnded(object)) return 0;
  const int64_t grace =
      requested.value_or(spec.value("terminationGracePeriodSeconds", int64_t{30}));
  return grace < 0 ? 1 : grace;
}

}  // namespace

ObjectPtr Store::Find(const ObjectRef& ref) const {
  const ResourceState* state = FindState(ref.key);
  if (state == nullptr) return nullptr;
  auto it = state->objects.find(ObjectKey(ref.ns, ref.name));
  return it == state->objects.end() ? nullptr : it->second;
}

ObjectPtr Store::Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                        const DeleteOptions& options) {
  const std::optional<std::string>& uid_precondition = options.uid_precondition;
  const std::optional<std::string>& rv_precondition = options.rv_precondition;
  std::unique_lock lock(mutex_);
  const ObjectRef ref{r.Key(), ns, name};
  const ObjectPtr current = Find(ref);
  const nlohmann::json details = {{"name", name}, {"group", r.group}, {"kind", r.plural}};
  if (current == nullptr) {
    throw ApiError(404, "NotFound", fmt::format("{} \"{}\" not found", QualifiedResource(r), name),
                   details);
  }
  const auto& meta = current->object["metadata"];
  if (uid_precondition && *uid_precondition != meta.value("uid", "")) {
    throw ApiError(
        409, "Conflict",
        fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    *uid_precondition, meta.value("uid", "")),
        details);
  }
  if (rv_precondition && *rv_precondition != meta.value("resourceVersion", "")) {
    throw ApiError(409, "Conflict",
                   fmt::format("Precondition failed: ResourceVersion in precondition: {}, "
                               "ResourceVersion in object meta: {}",
                               *rv_precondition, meta.value("resourceVersion", "")),
                   details);
  }
  if (options.dry_run) return current;
  return DeleteLocked(ref, options.propagation, 0, options.grace_period_seconds);
}

ObjectPtr Store::DeleteLocked(const ObjectRef& ref, Propagation propagation, int depth,
                              std::optional<int64_t> grace_period_seconds) {
  const ObjectPtr current = Find(ref);
  if (current == nullptr) return nullptr;
  const int64_t grace = GracePeriod(ref.key, current->object, grace_period_seconds);
  if (grace > 0) return MarkTerminatingLocked(ref, current, grace);
  const auto& meta = current->object["metadata"];
  if (meta.value("finalizers", nlohmann::json::array()).empty()) {
    return RemoveLocked(ref, propagation, depth);
  }
  // Finalizers hold the object: mark it and let whoever owns the finalizer finish the job.
  if (meta.contains("deletionTimestamp") && meta.value("deletionGracePeriodSeconds", 0) == 0) {
    return current;
  }
  nlohmann::json marked = current->object;
  marked["metadata"]["deletionTimestamp"] = NowRfc3339();
  marked["metadata"]["deletionGracePeriodSeconds"] = 0;
  const uint64_t rv = NextRv();
  marked["metadata"]["resourceVersion"] = std::to_string(rv);
  ObjectPtr stored = MakeStored(std::move(marked), rv);
  Commit(ref.key, ref.ns, ref.name, current, stored, "MODIFIED");
  return stored;
}

ObjectPtr Store::MarkTerminatingLocked(const ObjectRef& ref, const ObjectPtr& current,
                                       int64_t grace_seconds) {
  const auto& meta = current->object["metadata"];
  // Already going within that time: a deletion only ever brings the end closer.
  if (meta.contains("deletionTimestamp") &&
      meta.value("deletionGracePeriodSeconds", int64_t{0}) <= grace_seconds) {
    return current;
  }
  nlohmann::json marked = current->object;
  marked["metadata"]["deletionTimestamp"] =
      FormatRfc3339(std::chrono::system_clock::now() + std::chrono::seconds(grace_seconds));
  marked["metadata"]["deletionGracePeriodSeconds"] = grace_seconds;
  const uint64_t rv = NextRv();
  marked["metadata"]["resourceVersion"] = std::to_string(rv);
  ObjectPtr stored = MakeStored(std::move(marked), rv);
  Commit(ref.key, ref.ns, ref.name, current, stored, "MODIFIED");
  return stored;
}

ObjectPtr Store::RemoveLocked(const ObjectRef& ref, Propagation propagation, int depth) {
  const ObjectPtr current = Find(ref);
  if (current == nullptr) return nullptr;
  // Foreground: dependents go first, so the owner is visible until they are gone.
  if (propagation == Propagation::kForeground) {
    CascadeLocked(current->object, propagation, depth);
  }
  nlohmann::json last = current->object;
  const uint64_t rv = NextRv();
  last["metadata"]["resourceVersion"] = std::to_string(rv);
  ObjectPtr stored = MakeStored(std::move(last), rv);
  Commit(ref.key, ref.ns, ref.name, current, stored, "DELETED");

  if (ref.key == "namespaces") {
    std::vector<ObjectRef> contents;
    for (const auto& [key, state] : resources_) {
      for (const auto& [object_key, object] : state.objects) {
        if (object->object["metadata"].value("namespace", "") == ref.name) {
          contents.push_back({key, ref.name, object->object["metadata"].value("name", "")});
        }
      }
    }
    for (const auto& content : contents) DeleteLocked(content, Propagation::kBackground, depth + 1);
  }
  if (ref.key == kCrdKey) {
    const std::string custom_key = stored->object["metadata"].value("name", "");
    std::vector<ObjectRef> objects;
    if (const ResourceState* state = FindState(custom_key); state != nullptr) {
      for (const auto& [object_key, object] : state->objects) {
        const auto& meta = object->object["metadata"];
        objects.push_back({custom_key, meta.value("namespace", ""), meta.value("name", "")});
      }
    }
    for (const auto& object : objects) RemoveLocked(object, Propagation::kBackground, depth + 1);
    UnregisterCrd(stored->object);
  }
  if (propagation == Propagation::kOrphan ||
      (propagation == Propagation::kBackground && !gc_held_)) {
    CascadeLocked(stored->object, propagation, depth);
  }
  return stored;
}

void Store::HoldGarbageCollection(bool held) {
  {
    std::unique_lock lock(mutex_);
    gc_held_ = held;
  }
  if (!held) CollectGarbage();
}

void Store::CollectGarbage() {
  std::unique_lock lock(mutex_);
  if (gc_held_) return;
  std::vector<std::string> missing;
  for (const auto& [uid, dependents] : dependents_) {
    if (!by_uid_.contains(uid)) missing.push_back(uid);
  }
  for (const auto& uid : missing) {
    CascadeLocked({{"metadata", {{"uid", uid}}}}, Propagation::kBackground, 0);
  }
}

void Store::CascadeLocked(const nlohmann::json& owner, Propagation propagation, int depth) {
  if (depth >= kMaxCascadeDepth) return;
  const std::string uid = owner["metadata"].value("uid", "");
  auto it = dependents_.find(uid);
  if (uid.empty() || it == dependents_.end()) return;
  const std::set<ObjectRef> dependents = it->second;
  for (const ObjectRef& dependent : dependents) {
    const ObjectPtr current = Find(dependent);
    if (current == nullptr) continue;
    nlohmann::json remaining = nlohmann::json::array();
    bool other_owner_alive = false;
    for (const auto& ref : current->object["metadata"]["ownerReferences"]) {
      if (ref.value("uid", "") == uid) continue;
      remaining.push_back(ref);
      other_owner_alive = other_owner_alive || by_uid_.contains(ref.value("uid", ""));
    }
    if (propagation != Propagation::kOrphan && !other_owner_alive) {
      DeleteLocked(dependent, propagation, depth + 1);
      continue;
    }
    // Orphaned, or still owned by someone else: only the reference to the deleted owner goes.
    nlohmann::json updated = current->object;
    if (remaining.empty()) {
      updated["metadata"].erase("ownerReferences");
    } else {
      updated["metadata"]["ownerReferences"] = remaining;
    }
    const uint64_t rv = NextRv();
    updated["metadata"]["resourceVersion"] = std::to_string(rv);
    Commit(dependent.key, dependent.ns, dependent.name, current, MakeStored(std::move(updated), rv),
           "MODIFIED");
  }
}

}  // namespace autodist::k8s
