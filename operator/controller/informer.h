// An informer keeps an ObjectCache of one resource in step with the API server and tells
// handlers what changed: list, then watch from the list's resourceVersion; bookmarks advance
// that version without events; a watch the server ends is resumed where it stopped; 410 Gone
// (the version was compacted away) means relist; other failures (a 500, a 429, a refused
// connection) are retried with exponential back-off. A relist turns into the adds, updates and
// deletes that reconcile the cache with the new list, so no change is lost across a gap.
// An optional transform trims each object before it is cached (client-go's SetTransform).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "operator/controller/backoff.h"
#include "operator/controller/cache.h"
#include "operator/kube/client.h"

namespace autodist::controller {

// Called on the informer's thread, one event at a time, after the cache holds the change. The
// objects are as cached: after InformerOptions::transform.
struct EventHandler {
  std::function<void(const nlohmann::json& object)> on_add;
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& object)> on_update;
  // `object` is the last state known (from the DELETED event, or the cache on a relist).
  std::function<void(const nlohmann::json& object)> on_delete;
};

// Maps an object as the API server sent it to what the cache keeps. The cache holds every object
// of the resource for the life of the process as a JSON tree several times the size of its
// text, so dropping what no reader needs (a pod's spec, managedFields) bounds the operator's
// memory at scale. The result must keep metadata.name, metadata.namespace and
// metadata.resourceVersion (the cache's key and change detection) and whatever the indexes and
// readers use (labels, ownerReferences). Cached objects are a partial view: never write one back
// with Update (an update would erase the dropped fields); patch or fetch first.
using ObjectTransform = std::function<nlohmann::json(const nlohmann::json& object)>;

struct InformerOptions {
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  long page_size = 500;  // list in pages of this many (0 = one request)
  // Each watch asks the server to end it after this long (then it is resumed): long-lived
  // connections through load balancers die silently, and this bounds how long one can hang.
  int watch_timeout_seconds = 300;
  BackoffPolicy backoff{std::chrono::milliseconds(100), std::chrono::seconds(30), 2.0, 0.1};
  // Applied to every listed object and every watch event's object (deleted ones too, so handlers
  // always see the shape the cache holds); empty = cache objects as they came.
  ObjectTransform transform;
};

class Informer {
 public:
  Informer(kube::Client& client, kube::Resource resource, InformerOptions options = {});
  ~Informer();  // stops
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Handlers must be added before Start.
  void AddHandler(EventHandler handler);
  void Start();
  // Cancels the watch and joins the thread; returns promptly (an in-flight list finishes first,
  // bounded by the client's request timeout).
  void Stop();

  // True once the first list reached the cache (and stays true across relists).
  bool HasSynced() const { return synced_.load(); }
  // Waits for HasSynced; false on timeout or when stopped first.
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  const ObjectCache& cache() const { return cache_; }
  const kube::Resource& resource() const { return resource_; }
  // The resourceVersion the next watch would start from.
  std::string last_resource_version() const;
  // How many lists and watches were started (tests check relists and reconnects).
  int lists() const { return lists_.load(); }
  int watches() const { return watches_.load(); }

 private:
  void Run(std::stop_token stop);
  void ListAndReplace();
  void Apply(const kube::WatchEvent& event);
  void SetResourceVersion(const std::string& rv);
  // Sleeps `delay` unless stopped first.
  void Pause(std::chrono::milliseconds delay, std::stop_token stop);

  kube::Client& client_;
  kube::Resource resource_;
  InformerOptions options_;
  std::vector<EventHandler> handlers_;
  ObjectCache cache_;

  mutable std::mutex mutex_;
  mutable std::condition_variable_any cv_;
  std::string resource_version_;
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<int> lists_{0};
  std::atomic<int> watches_{0};
  std::jthread thread_;
};

}  // namespace autodist::controller
