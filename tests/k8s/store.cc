#include "tests/k8s/store.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "tests/k8s/api_error.h"
#include "tests/k8s/base64.h"
#include "tests/k8s/clock.h"

namespace autodist::k8s {
namespace {

nlohmann::json NamespaceObject(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Namespace"},
          {"metadata",
           {{"name", name},
            {"uid", NewUid()},
            {"creationTimestamp", NowRfc3339()},
            {"labels", {{"kubernetes.io/metadata.name", name}}}}},
          {"spec", {{"finalizers", {"kubernetes"}}}},
          {"status", {{"phase", "Active"}}}};
}

}  // namespace

Store::Store(StoreOptions options) : options_(options) {
  for (auto& info : BuiltinResources()) {
    registry_[{info.group, info.version, info.plural}] = std::make_shared<const ResourceInfo>(info);
  }
  // The namespaces every cluster starts with.
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    nlohmann::json object = NamespaceObject(ns);
    const uint64_t rv = NextRv();
    object["metadata"]["resourceVersion"] = std::to_string(rv);
    Commit("namespaces", "", ns, nullptr, MakeStored(std::move(object), rv), "ADDED");
  }
}

std::shared_ptr<const ResourceInfo> Store::FindResource(const std::string& group,
                                                        const std::string& version,
                                                        const std::string& plural) const {
  std::shared_lock lock(mutex_);
  auto it = registry_.find({group, version, plural});
  if (it == registry_.end()) return nullptr;
  return it->second;
}

std::vector<ResourceInfo> Store::Resources() const {
  std::shared_lock lock(mutex_);
  std::vector<ResourceInfo> out;
  for (const auto& [key, info] : registry_) out.push_back(*info);
  return out;
}

size_t Store::VersionCount(const std::string& key) const {
  std::shared_lock lock(mutex_);
  size_t n = 0;
  for (const auto& [unused, info] : registry_) n += info->Key() == key ? 1 : 0;
  return n;
}

uint64_t Store::registry_generation() const {
  std::shared_lock lock(mutex_);
  return registry_generation_;
}

uint64_t Store::current_rv() const {
  std::shared_lock lock(mutex_);
  return rv_;
}

const Store::ResourceState* Store::FindState(const std::string& key) const {
  auto it = resources_.find(key);
  return it == resources_.end() ? nullptr : &it->second;
}

ObjectPtr Store::Get(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
  std::shared_lock lock(mutex_);
  const ResourceState* state = FindState(r.Key());
  if (state == nullptr) return nullptr;
  auto it = state->objects.find(ObjectKey(ns, name));
  return it == state->objects.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Store::ListAll(const ResourceInfo& r, const std::string& ns) const {
  return List(r, ns, LabelSelector::Parse(""), FieldSelector::Parse("", r), 0, "").items;
}

ListResult Store::List(const ResourceInfo& r, const std::string& ns, const LabelSelector& labels,
                       const FieldSelector& fields, long limit,
                       const std::string& continue_token) const {
  std::shared_lock lock(mutex_);
  ListResult result;
  result.rv = rv_;
  const ResourceState* state = FindState(r.Key());
  if (state == nullptr) return result;
  const std::string prefix = ns.empty() ? "" : ns + "/";
  std::string after;
  uint64_t token_rv = rv_;
  if (!continue_token.empty()) {
    nlohmann::json token = nlohmann::json::parse(Base64Decode(continue_token), nullptr, false);
    if (!token.is_object() || !token.contains("rv") || !token.contains("start")) {
      FailApi(400, "BadRequest", "continue key is not valid: malformed token");
    }
    token_rv = token["rv"].get<uint64_t>();
    after = token["start"].get<std::string>();
    if (token_rv < state->compacted_rv) {
      FailApi(410, "Expired",
              "The provided continue parameter is too old to display a consistent list result. "
              "You can start a new list without the continue parameter.");
    }
    result.rv = token_rv;
  }
  auto it = after.empty() ? state->objects.lower_bound(prefix) : state->objects.upper_bound(after);
  const auto pinned = fields.PinnedName();
  if (pinned && !ns.empty() && after.empty())
    it = state->objects.lower_bound(ObjectKey(ns, *pinned));
  for (; it != state->objects.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    const auto& object = it->second->object;
    if (pinned && object["metadata"].value("name", "") != *pinned) {
      if (!ns.empty()) break;
      continue;
    }
    const auto& meta = object["metadata"];
    if (!labels.Matches(meta.contains("labels") ? meta["labels"] : nlohmann::json()) ||
        !fields.Matches(object)) {
      continue;
    }
    if (limit > 0 && static_cast<long>(result.items.size()) == limit) {
      result.continue_token =
          Base64Encode(nlohmann::json{{"rv", token_rv}, {"start", std::prev(it)->first}}.dump());
      break;
    }
    result.items.push_back(it->second);
  }
  return result;
}

ObjectPtr Store::Mutate(const ResourceInfo& r, const std::string& ns, const std::string& name,
                        const Mutation& fn, bool dry_run) {
  std::unique_lock lock(mutex_);
  ResourceState& state = State(r.Key());
  const std::string key = ObjectKey(ns, name);
  auto it = state.objects.find(key);
  const ObjectPtr current = it == state.objects.end() ? nullptr : it->second;
  if (current == nullptr && r.namespaced) {
    const ResourceState* namespaces = FindState("namespaces");
    if (namespaces == nullptr || !namespaces->objects.contains(ObjectKey("", ns))) {
      throw ApiError(404, "NotFound", fmt::format("namespaces \"{}\" not found", ns),
                     {{"name", ns}, {"kind", "namespaces"}});
    }
  }
  std::optional<nlohmann::json> next = fn(current);
  if (!next.has_value()) return current;
  if (dry_run) return MakeStored(std::move(*next), current == nullptr ? 0 : current->rv);
  const uint64_t rv = NextRv();
  auto& meta = (*next)["metadata"];
  meta["resourceVersion"] = std::to_string(rv);
  // An object marked for deletion goes once its last finalizer does; a pod within its grace
  // period (deletionGracePeriodSeconds above 0) stays until deleted again with none.
  const bool finalized = current != nullptr && meta.contains("deletionTimestamp") &&
                         meta.value("deletionGracePeriodSeconds", int64_t{0}) == 0 &&
                         meta.value("finalizers", nlohmann::json::array()).empty();
  ObjectPtr stored = MakeStored(std::move(*next), rv);
  Commit(r.Key(), ns, name, current, stored, current == nullptr ? "ADDED" : "MODIFIED");
  if (r.Key() == kCrdKey) RegisterCrd(stored->object);
  if (finalized) return RemoveLocked({r.Key(), ns, name}, Propagation::kBackground, 0);
  return stored;
}

void Store::Commit(const std::string& key, const std::string& ns, const std::string& name,
                   const ObjectPtr& previous, const ObjectPtr& next, const std::string& type) {
  ResourceState& state = State(key);
  const ObjectRef ref{key, ns, name};
  if (previous != nullptr) Index(previous, ref, false);
  if (type == "DELETED") {
    state.objects.erase(ObjectKey(ns, name));
  } else {
    state.objects[ObjectKey(ns, name)] = next;
    Index(next, ref, true);
  }
  WatchEvent event{type, next, type == "MODIFIED" ? previous : nullptr, next->rv};
  for (const auto& watcher : state.watchers) watcher->Deliver(event);
  state.history.push_back(std::move(event));
  while (state.history.size() > options_.history_size) {
    state.compacted_rv = state.history.front().rv;
    state.history.pop_front();
  }
}

void Store::Index(const ObjectPtr& object, const ObjectRef& ref, bool add) {
  const auto& meta = object->object["metadata"];
  const std::string uid = meta.value("uid", "");
  if (!uid.empty()) {
    if (add) {
      by_uid_[uid] = ref;
    } else {
      by_uid_.erase(uid);
    }
  }
  if (!meta.contains("ownerReferences")) return;
  for (const auto& owner : meta["ownerReferences"]) {
    const std::string owner_uid = owner.value("uid", "");
    if (add) {
      dependents_[owner_uid].insert(ref);
    } else if (auto it = dependents_.find(owner_uid); it != dependents_.end()) {
      it->second.erase(ref);
      if (it->second.empty()) dependents_.erase(it);
    }
  }
}

void Store::RegisterCrd(const nlohmann::json& crd) {
  const auto infos = ResourcesFromCrd(crd);
  UnregisterCrd(crd);
  for (const auto& info : infos) {
    registry_[{info.group, info.version, info.plural}] = std::make_shared<const ResourceInfo>(info);
  }
  ++registry_generation_;
}

void Store::UnregisterCrd(const nlohmann::json& crd) {
  const std::string key = crd["metadata"].value("name", "");
  std::erase_if(registry_, [&](const auto& entry) {
    return entry.second->is_custom && entry.second->Key() == key;
  });
  ++registry_generation_;
}

std::shared_ptr<Watcher> Store::Watch(const ResourceInfo& r, const WatchStart& start,
                                      WatchOptions options, std::shared_ptr<WatchSink> sink) {
  std::unique_lock lock(mutex_);
  auto watcher = std::make_shared<Watcher>(std::move(options), std::move(sink));
  ResourceState& state = State(r.Key());
  if (start.mode == WatchStart::kNow) {
    for (const auto& [key, object] : state.objects) {
      watcher->Deliver({"ADDED", object, nullptr, object->rv});
    }
    if (start.initial_events_end_bookmark) watcher->SendBookmark(rv_, true);
  } else if (start.rv < state.compacted_rv) {
    watcher->SendErrorAndStop(FailureStatus(
        410, "Expired",
        fmt::format("too old resource version: {} ({})", start.rv, state.compacted_rv)));
    return watcher;
  } else {
    for (const auto& event : state.history) {
      if (event.rv > start.rv) watcher->Deliver(event);
    }
  }
  state.watchers.push_back(watcher);
  return watcher;
}

void Store::Tick() {
  std::unique_lock lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  for (auto& [key, state] : resources_) {
    for (const auto& watcher : state.watchers) {
      // timeoutSeconds ends a watch cleanly; a client too slow to drain its backlog is cut off.
      if (watcher->Expired(now) || watcher->Backlog() > options_.max_watch_backlog) {
        watcher->Stop();
      }
    }
    std::erase_if(state.watchers, [](const auto& w) { return w->stopped(); });
  }
}

void Store::SendBookmarksNow() {
  // Shared: no writer runs meanwhile, so rv_ covers every event already delivered.
  std::shared_lock lock(mutex_);
  for (const auto& [key, state] : resources_) {
    for (const auto& watcher : state.watchers) {
      if (watcher->wants_bookmarks()) watcher->SendBookmark(rv_, false);
    }
  }
}

void Store::CloseAllWatches() {
  std::unique_lock lock(mutex_);
  for (auto& [key, state] : resources_) {
    for (const auto& watcher : state.watchers) watcher->Stop();
    state.watchers.clear();
  }
}

void Store::CompactHistory() {
  std::unique_lock lock(mutex_);
  for (auto& [key, state] : resources_) {
    state.history.clear();
    state.compacted_rv = rv_;
  }
}

size_t Store::open_watches() const {
  std::shared_lock lock(mutex_);
  size_t n = 0;
  for (const auto& [key, state] : resources_) {
    for (const auto& watcher : state.watchers) n += watcher->stopped() ? 0 : 1;
  }
  return n;
}

size_t Store::object_count() const {
  std::shared_lock lock(mutex_);
  size_t n = 0;
  for (const auto& [key, state] : resources_) n += state.objects.size();
  return n;
}

}  // namespace autodist::k8s
