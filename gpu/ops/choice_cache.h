// Internal: the decisions an op kernel makes once per shape and keeps for the process (which of
// Conv's or pooling's paths runs a shape, conv_path.h and pool_path.h), shared by every node of
// that shape in any session. Plain C++, thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

namespace autodist::gpu {

// `Choice`s by a key made of `KeyParts` (a shape, a direction, a mode).
template <typename Choice, typename... KeyParts>
class ChoiceCache {
 public:
  // The process's cache of this kind. Never destroyed: kernels of static sessions may still ask
  // while statics are torn down.
  static ChoiceCache& Global() {
    static auto* cache = new ChoiceCache();
    return *cache;
  }

  // The choice for the key: `decide` runs the first time only, outside the lock (it times work on
  // the GPU, and may throw, leaving nothing behind); two threads deciding one key at once keep the
  // first answer.
  Choice ChooseOnce(const KeyParts&... parts, const std::function<Choice()>& decide) {
    const Key key(parts...);
    {
      const std::lock_guard lock(mutex_);
      if (auto it = choices_.find(key); it != choices_.end()) return it->second;
    }
    const Choice choice = decide();
    const std::lock_guard lock(mutex_);
    ++decisions_;
    return choices_.emplace(key, choice).first->second;
  }

  std::optional<Choice> Find(const KeyParts&... parts) const {
    const std::lock_guard lock(mutex_);
    auto it = choices_.find(Key(parts...));
    if (it == choices_.end()) return std::nullopt;
    return it->second;
  }

  // How many times a `decide` has run: a shape measured once shows here once.
  size_t decisions() const {
    const std::lock_guard lock(mutex_);
    return decisions_;
  }

 private:
  using Key = std::tuple<KeyParts...>;
  mutable std::mutex mutex_;
  std::map<Key, Choice> choices_;
  size_t decisions_ = 0;
};

}  // namespace autodist::gpu
