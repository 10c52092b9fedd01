// The coordinator's key-value store, through which collectives rendezvous (StoreSet/StoreGet in
// proto/coordinator.proto): Gloo publishes each rank's addresses under a key and waits for the
// other ranks' keys. Plain bookkeeping like Barriers: not thread-safe (the service calls it under
// its one lock) and it never waits. Every size is bounded, so a confused or hostile member cannot
// grow the coordinator's memory without limit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace autodist::coordinator {

struct StoreLimits {
  int64_t max_key_bytes = 1024;                  // per key
  int64_t max_value_bytes = int64_t{1} << 20;    // per value; Gloo's largest is ~150 B a rank
  int64_t max_entries = 65536;                   // keys held at once
  int64_t max_total_bytes = int64_t{256} << 20;  // keys and values held at once
  int64_t max_keys_per_get = 1024;               // keys one StoreGet may ask for
  int64_t max_reply_bytes = int64_t{32} << 20;   // values one StoreGet may return: half the
                                                 // gRPC message limit (rpc.h)
};

class KeyValueStore {
 public:
  explicit KeyValueStore(StoreLimits limits = {});

  // Sets `key` (replacing an earlier value). Throws InvalidArgument naming `node` and the key
  // for an empty or oversized key, an oversized value, or a store that would pass its limits.
  void Set(const std::string& node, const std::string& key, std::string value);

  // Throws InvalidArgument naming `node` for an empty request, too many keys, or an empty or
  // oversized key.
  void CheckGet(const std::string& node, const std::vector<std::string>& keys) const;
  // The keys not set yet, in request order.
  std::vector<std::string> Missing(const std::vector<std::string>& keys) const;
  // The values of `keys`, every one set. Throws InvalidArgument naming `node` when they add up
  // to more than one reply may carry.
  std::vector<std::string> Get(const std::string& node, const std::vector<std::string>& keys) const;

  int64_t entries() const { return static_cast<int64_t>(values_.size()); }
  int64_t total_bytes() const { return total_bytes_; }

 private:
  void CheckKey(const char* call, const std::string& node, const std::string& key) const;

  StoreLimits limits_;
  std::map<std::string, std::string> values_;
  int64_t total_bytes_ = 0;
};

}  // namespace autodist::coordinator
