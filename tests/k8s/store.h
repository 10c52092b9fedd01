// The object store behind the test double: every object of every resource, one global
// resourceVersion counter, a bounded per-resource event history for watches, the open watches,
// the ownerReference index for cascading deletes, and the resource registry (built-ins plus
// CRDs, re-registered whenever a CustomResourceDefinition is written).
//
// One reader-writer lock guards it all. Writers deliver events to watches while holding it, which
// keeps every watch in resourceVersion order; delivery only appends to the watch's in-memory
// buffer, so a slow watch never blocks a writer (a watch whose backlog passes a limit is closed,
// as the real server drops slow watchers).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tests/k8s/resources.h"
#include "tests/k8s/selectors.h"
#include "tests/k8s/watch.h"

namespace autodist::k8s {

// The resource key of CustomResourceDefinitions, which the store treats specially.
inline constexpr char kCrdKey[] = "customresourcedefinitions.apiextensions.k8s.io";

struct StoreOptions {
  size_t history_size = 10000;          // events kept per resource for watch resumption
  size_t max_watch_backlog = 64 << 20;  // bytes; a watch further behind is closed
};

enum class Propagation { kBackground, kForeground, kOrphan };

struct DeleteOptions {
  Propagation propagation = Propagation::kBackground;
  std::optional<std::string> uid_precondition;
  std::optional<std::string> rv_precondition;
  bool dry_run = false;
  // DeleteOptions.gracePeriodSeconds: for pods, instead of spec.terminationGracePeriodSeconds;
  // 0 deletes at once (kubectl delete --force --grace-period=0, or the kubelet's last delete).
  std::optional<int64_t> grace_period_seconds;
};

struct ListResult {
  std::vector<ObjectPtr> items;
  uint64_t rv = 0;
  std::string continue_token;
  std::optional<long> remaining;
};

// Where a watch starts: kNow sends the current objects as ADDED first (resourceVersion "" or
// "0"); kAfter replays the history after `rv` (410 when it was compacted away).
struct WatchStart {
  enum Mode { kNow, kAfter } mode = kNow;
  uint64_t rv = 0;
  bool initial_events_end_bookmark = false;  // sendInitialEvents=true
};

class Store {
 public:
  explicit Store(StoreOptions options = {});

  // --- registry ---
  // Null when not served. Shared, not copied: a CRD's ResourceInfo holds its whole schema, and
  // every request looks its resource up.
  std::shared_ptr<const ResourceInfo> FindResource(const std::string& group,
                                                   const std::string& version,
                                                   const std::string& plural) const;
  // Copies of every served resource (discovery documents).
  std::vector<ResourceInfo> Resources() const;
  // How many versions of the resource stored under `key` ("autodistjobs.autodist.io") are served.
  size_t VersionCount(const std::string& key) const;
  // Changes whenever a CRD is (re)registered or removed, so discovery can cache its documents.
  uint64_t registry_generation() const;

  // --- reads ---
  ObjectPtr Get(const ResourceInfo& r, const std::string& ns, const std::string& name) const;
  // Objects sorted by namespace/name. `limit` 0 means all. Throws ApiError 410 when the continue
  // token predates the resource's compacted history.
  // Every object of `r` in namespace `ns` ("" = every namespace), sorted: List without selectors
  // or limit.
  std::vector<ObjectPtr> ListAll(const ResourceInfo& r, const std::string& ns) const;
  ListResult List(const ResourceInfo& r, const std::string& ns, const LabelSelector& labels,
                  const FieldSelector& fields, long limit, const std::string& continue_token) const;
  uint64_t current_rv() const;

  // --- writes ---
  // Read-modify-write of one object under the lock: `fn` gets the current object (null when
  // absent) and returns its new content, or nullopt for "unchanged". The store stamps
  // metadata.resourceVersion, commits and emits ADDED/MODIFIED; with `dry_run` nothing is stored.
  // If the new content empties the finalizers of an object marked for deletion, it is removed.
  using Mutation = std::function<std::optional<nlohmann::json>(const ObjectPtr& current)>;
  ObjectPtr Mutate(const ResourceInfo& r, const std::string& ns, const std::string& name,
                   const Mutation& fn, bool dry_run = false);

  // Deletes one object (404 when absent; 409 when a precondition fails) and, unless orphaning,
  // its dependents (ownerReferences to its uid) transitively. Objects with finalizers get
  // metadata.deletionTimestamp and stay until their finalizers are removed. A pod bound to a
  // node and not yet ended is deleted gracefully: it gets deletionTimestamp (now + its grace
  // period) and deletionGracePeriodSeconds and stays, Terminating, until the node's kubelet (the
  // node agent) reports its containers stopped and deletes it with a grace period of 0; a
  // second deletion may only shorten the grace period. Deleting a namespace deletes its
  // contents; deleting a CRD deletes its objects and unregisters it. Returns the object as
  // deleted (or as marked).
  ObjectPtr Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                   const DeleteOptions& options);

  // --- watches ---
  std::shared_ptr<Watcher> Watch(const ResourceInfo& r, const WatchStart& start,
                                 WatchOptions options, std::shared_ptr<WatchSink> sink);
  // Bookmarks to every watch that asked for them; ends expired, slow and closed watches.
  void Tick();
  void SendBookmarksNow();
  // The garbage collector's sweep: objects whose owners (by uid) are all gone are deleted, and
  // references to missing owners are dropped from objects that still have a live owner.
  void CollectGarbage();
  // Deferred garbage collection, as a real cluster's collector is asynchronous: while held, a
  // Background (or default) deletion removes only the owner, and the sweep deletes nothing, so
  // the dependents outlive it. Releasing runs the sweep at once. Foreground deletions still
  // remove dependents first, and Orphan still drops the references.
  void HoldGarbageCollection(bool held);
  // Ends every open watch now (clients see the stream end and re-watch).
  void CloseAllWatches();
  // Drops all event history: resuming a watch or a list from any older resourceVersion is 410.
  void CompactHistory();
  size_t open_watches() const;
  size_t object_count() const;

 private:
  struct ObjectRef {
    std::string key, ns, name;
    auto operator<=>(const ObjectRef&) const = default;
  };
  struct ResourceState {
    std::map<std::string, ObjectPtr> objects;  // "namespace/name"
    std::deque<WatchEvent> history;
    uint64_t compacted_rv = 0;  // history holds every event after this
    std::vector<std::shared_ptr<Watcher>> watchers;
  };

  static std::string ObjectKey(const std::string& ns, const std::string& name) {
    return ns + "/" + name;
  }
  ResourceState& State(const std::string& key) { return resources_[key]; }
  const ResourceState* FindState(const std::string& key) const;
  // Stores `next` (null to remove) and emits the event. Lock held.
  void Commit(const std::string& key, const std::string& ns, const std::string& name,
              const ObjectPtr& previous, const ObjectPtr& next, const std::string& type);
  void Index(const ObjectPtr& object, const ObjectRef& ref, bool add);
  void RegisterCrd(const nlohmann::json& crd);
  void UnregisterCrd(const nlohmann::json& crd);
  // Deletes (or, gracefully or with finalizers, marks) one object; lock held.
  ObjectPtr DeleteLocked(const ObjectRef& ref, Propagation propagation, int depth,
                         std::optional<int64_t> grace_period_seconds = std::nullopt);
  // Sets deletionTimestamp `grace_seconds` from now (or shortens an earlier one); lock held.
  ObjectPtr MarkTerminatingLocked(const ObjectRef& ref, const ObjectPtr& current,
                                  int64_t grace_seconds);
  // Removes the object now, cascading per `propagation`; lock held.
  ObjectPtr RemoveLocked(const ObjectRef& ref, Propagation propagation, int depth);
  // Deletes or orphans the dependents of a removed owner; lock held.
  void CascadeLocked(const nlohmann::json& owner, Propagation propagation, int depth);
  ObjectPtr Find(const ObjectRef& ref) const;
  uint64_t NextRv() { return ++rv_; }

  StoreOptions options_;
  mutable std::shared_mutex mutex_;
  uint64_t rv_ = 0;
  bool gc_held_ = false;
  uint64_t registry_generation_ = 0;
  std::map<std::tuple<std::string, std::string, std::string>, std::shared_ptr<const ResourceInfo>>
      registry_;
  std::map<std::string, ResourceState> resources_;
  std::unordered_map<std::string, std::set<ObjectRef>> dependents_;  // owner uid -> dependents
  std::unordered_map<std::string, ObjectRef> by_uid_;
};

}  // namespace autodist::k8s
