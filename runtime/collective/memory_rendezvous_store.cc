#include "runtime/collective/memory_rendezvous_store.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/common/error.h"

namespace autodist::collective {

void MemoryRendezvousStore::Set(const std::string& key, const std::string& value) {
  {
    const std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

std::vector<std::string> MemoryRendezvousStore::Get(const std::vector<std::string>& keys,
                                                    std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  const auto present = [&] {
    return std::ranges::all_of(keys, [&](const std::string& key) { return values_.contains(key); });
  };
  if (!changed_.wait_for(lock, wait, present)) {
    std::vector<std::string> missing;
    for (const std::string& key : keys) {
      if (!values_.contains(key)) missing.push_back(key);
    }
    Fail(ErrorCode::kUnavailable, "rendezvous in memory: keys {} missing after {} ms",
         fmt::join(missing, ", "), wait.count());
  }
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (const std::string& key : keys) values.push_back(values_.at(key));
  return values;
}

}  // namespace autodist::collective
