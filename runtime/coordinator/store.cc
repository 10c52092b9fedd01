#include "runtime/coordinator/store.h"

#include <utility>

#include "runtime/common/error.h"

namespace autodist::coordinator {
namespace {

int64_t Size(const std::string& s) { return static_cast<int64_t>(s.size()); }

// Keys may be arbitrary bytes; messages show at most this much of one.
std::string Shown(const std::string& key) {
  constexpr size_t kShown = 80;
  return key.size() <= kShown ? key : key.substr(0, kShown) + "...";
}

}  // namespace

KeyValueStore::KeyValueStore(StoreLimits limits) : limits_(limits) {}

void KeyValueStore::CheckKey(const char* call, const std::string& node,
                             const std::string& key) const {
  AD_CHECK(!key.empty(), kInvalidArgument, "{}: worker '{}' sent an empty key", call, node);
  AD_CHECK(Size(key) <= limits_.max_key_bytes, kInvalidArgument,
           "{}: worker '{}': key '{}' has {} bytes; keys may have at most {}", call, node,
           Shown(key), key.size(), limits_.max_key_bytes);
}

void KeyValueStore::Set(const std::string& node, const std::string& key, std::string value) {
  CheckKey("StoreSet", node, key);
  AD_CHECK(Size(value) <= limits_.max_value_bytes, kInvalidArgument,
           "StoreSet: worker '{}': the value of key '{}' has {} bytes; values may have at most {}",
           node, Shown(key), value.size(), limits_.max_value_bytes);
  const auto it = values_.find(key);
  const int64_t replaced = it == values_.end() ? 0 : Size(key) + Size(it->second);
  const int64_t entries_after = entries() + (it == values_.end() ? 1 : 0);
  const int64_t bytes_after = total_bytes_ - replaced + Size(key) + Size(value);
  AD_CHECK(entries_after <= limits_.max_entries && bytes_after <= limits_.max_total_bytes,
           kInvalidArgument,
           "StoreSet: worker '{}': key '{}' would take the store to {} keys and {} bytes; it "
           "holds at most {} keys and {} bytes",
           node, Shown(key), entries_after, bytes_after, limits_.max_entries,
           limits_.max_total_bytes);
  values_.insert_or_assign(key, std::move(value));
  total_bytes_ = bytes_after;
}

void KeyValueStore::CheckGet(const std::string& node, const std::vector<std::string>& keys) const {
  AD_CHECK(!keys.empty(), kInvalidArgument, "StoreGet: worker '{}' asked for no key", node);
  AD_CHECK(static_cast<int64_t>(keys.size()) <= limits_.max_keys_per_get, kInvalidArgument,
           "StoreGet: worker '{}' asked for {} keys; one call may ask for at most {}", node,
           keys.size(), limits_.max_keys_per_get);
  for (const std::string& key : keys) CheckKey("StoreGet", node, key);
}

std::vector<std::string> KeyValueStore::Missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const std::string& key : keys) {
    if (!values_.contains(key)) missing.push_back(key);
  }
  return missing;
}

std::vector<std::string> KeyValueStore::Get(const std::string& node,
                                            const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  int64_t bytes = 0;
  for (const std::string& key : keys) {
    const std::string& value = values_.at(key);
    bytes += Size(value);
    AD_CHECK(bytes <= limits_.max_reply_bytes, kInvalidArgument,
             "StoreGet: worker '{}': the {} keys asked for hold more than {} bytes, more than one "
             "reply may carry; ask for fewer keys at a time",
             node, keys.size(), limits_.max_reply_bytes);
    out.push_back(value);
  }
  return out;
}

}  // namespace autodist::coordinator
