// The informer's local copy of a resource: objects by "namespace/name" (or "name" for
// cluster-scoped kinds), with lookups by namespace + label selector and by owner UID.
// Thread-safe; readers get immutable snapshots (shared_ptr<const json>) that stay valid after
// the cache moves on, so a reconciler never sees an object change under it.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "operator/controller/label_selector.h"

namespace autodist::controller {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// "namespace/name", or "name" when the object has no namespace: the work queue's keys too.
std::string ObjectKey(const nlohmann::json& object);
std::string ObjectKey(const std::string& ns, const std::string& name);
// metadata.resourceVersion, or "" when the object has none.
std::string ResourceVersionOf(const nlohmann::json& object);
// Splits a key back into namespace ("" for cluster-scoped) and name.
std::pair<std::string, std::string> SplitKey(const std::string& key);

class ObjectCache {
 public:
  ObjectPtr Get(const std::string& key) const;
  ObjectPtr Get(const std::string& ns, const std::string& name) const {
    return Get(ObjectKey(ns, name));
  }
  // Objects in `ns` ("" = every namespace) matching `selector`, in key order.
  std::vector<ObjectPtr> List(const std::string& ns = "", const LabelSelector& selector = {}) const;
  // Objects with an ownerReference to `owner_uid`, in key order.
  std::vector<ObjectPtr> ListByOwner(const std::string& owner_uid) const;
  std::vector<std::string> Keys() const;
  size_t size() const;

  // --- writes, made by the informer ---
  // Stores `object`; returns what it replaced (null when new).
  ObjectPtr Upsert(nlohmann::json object);
  // Removes the object under `key`; returns it (null when absent).
  ObjectPtr Remove(const std::string& key);

 private:
  void IndexOwners(const std::string& key, const nlohmann::json& object, bool add);

  mutable std::shared_mutex mutex_;
  std::map<std::string, ObjectPtr> objects_;
  std::map<std::string, std::set<std::string>> by_owner_;  // owner uid -> keys
};

}  // namespace autodist::controller
