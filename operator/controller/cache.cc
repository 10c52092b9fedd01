#include "operator/controller/cache.h"

#include <mutex>

namespace autodist::controller {
namespace {

const nlohmann::json& Metadata(const nlohmann::json& object) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  return object.contains("metadata") && object["metadata"].is_object() ? object["metadata"]
                                                                       : kEmpty;
}

std::vector<std::string> OwnerUids(const nlohmann::json& object) {
  std::vector<std::string> uids;
  const auto& meta = Metadata(object);
  if (!meta.contains("ownerReferences") || !meta["ownerReferences"].is_array()) return uids;
  for (const auto& ref : meta["ownerReferences"]) {
    if (ref.is_object() && ref.contains("uid") && ref["uid"].is_string())
      uids.push_back(ref["uid"]);
  }
  return uids;
}

}  // namespace

std::string ObjectKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

std::string ObjectKey(const nlohmann::json& object) {
  const auto& meta = Metadata(object);
  return ObjectKey(meta.value("namespace", ""), meta.value("name", ""));
}

std::string ResourceVersionOf(const nlohmann::json& object) {
  const auto ptr = "/metadata/resourceVersion"_json_pointer;
  return object.contains(ptr) && object[ptr].is_string() ? object[ptr].get<std::string>() : "";
}

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

ObjectPtr ObjectCache::Get(const std::string& key) const {
  std::shared_lock lock(mutex_);
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> ObjectCache::List(const std::string& ns,
                                         const LabelSelector& selector) const {
  std::shared_lock lock(mutex_);
  std::vector<ObjectPtr> out;
  // Keys sort by namespace first, so one namespace is one contiguous range.
  auto it = ns.empty() ? objects_.begin() : objects_.lower_bound(ns + "/");
  for (; it != objects_.end(); ++it) {
    if (!ns.empty() && !it->first.starts_with(ns + "/")) break;
    const auto& meta = Metadata(*it->second);
    if (selector.empty() || selector.Matches(meta.contains("labels") ? meta["labels"] : nullptr)) {
      out.push_back(it->second);
    }
  }
  return out;
}

std::vector<ObjectPtr> ObjectCache::ListByOwner(const std::string& owner_uid) const {
  std::shared_lock lock(mutex_);
  std::vector<ObjectPtr> out;
  auto it = by_owner_.find(owner_uid);
  if (it == by_owner_.end()) return out;
  for (const auto& key : it->second) out.push_back(objects_.at(key));
  return out;
}

std::vector<std::string> ObjectCache::Keys() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> keys;
  keys.reserve(objects_.size());
  for (const auto& [key, object] : objects_) keys.push_back(key);
  return keys;
}

size_t ObjectCache::size() const {
  std::shared_lock lock(mutex_);
  return objects_.size();
}

void ObjectCache::IndexOwners(const std::string& key, const nlohmann::json& object, bool add) {
  for (const auto& uid : OwnerUids(object)) {
    if (add) {
      by_owner_[uid].insert(key);
    } else if (auto it = by_owner_.find(uid); it != by_owner_.end()) {
      it->second.erase(key);
      if (it->second.empty()) by_owner_.erase(it);
    }
  }
}

ObjectPtr ObjectCache::Upsert(nlohmann::json object) {
  const std::string key = ObjectKey(object);
  auto next = std::make_shared<const nlohmann::json>(std::move(object));
  std::unique_lock lock(mutex_);
  ObjectPtr& slot = objects_[key];
  ObjectPtr previous = slot;
  if (previous) IndexOwners(key, *previous, false);
  slot = next;
  IndexOwners(key, *next, true);
  return previous;
}

ObjectPtr ObjectCache::Remove(const std::string& key) {
  std::unique_lock lock(mutex_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return nullptr;
  ObjectPtr previous = it->second;
  objects_.erase(it);
  IndexOwners(key, *previous, false);
  return previous;
}

}  // namespace autodist::controller
