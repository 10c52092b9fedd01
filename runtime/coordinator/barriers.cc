#include "runtime/coordinator/barriers.h"

#include <algorithm>

#include "runtime/common/error.h"

namespace autodist::coordinator {

Barriers::Barriers(std::vector<std::string> workers) : workers_(std::move(workers)) {}

void Barriers::Arrive(const std::string& name, int64_t generation, int rank) {
  AD_CHECK(!name.empty(), kInvalidArgument, "Barrier: worker '{}' named no barrier",
           workers_.at(static_cast<size_t>(rank)));
  AD_CHECK(generation >= 0, kInvalidArgument,
           "Barrier '{}': worker '{}' sent a negative generation {}", name,
           workers_.at(static_cast<size_t>(rank)), generation);
  Key key(name, generation);
  if (released_.contains(key)) return;
  std::vector<bool>& arrived = pending_[key];
  arrived.resize(workers_.size(), false);
  arrived.at(static_cast<size_t>(rank)) = true;
  if (std::all_of(arrived.begin(), arrived.end(), [](bool a) { return a; })) {
    pending_.erase(key);
    released_.insert(std::move(key));
  }
}

bool Barriers::Released(const std::string& name, int64_t generation) const {
  return released_.contains(Key(name, generation));
}

std::vector<std::string> Barriers::Missing(const std::string& name, int64_t generation) const {
  const auto it = pending_.find(Key(name, generation));
  if (it == pending_.end())
    return Released(name, generation) ? std::vector<std::string>{} : workers_;
  std::vector<std::string> missing;
  for (size_t rank = 0; rank < workers_.size(); ++rank) {
    if (!it->second[rank]) missing.push_back(workers_[rank]);
  }
  return missing;
}

}  // namespace autodist::coordinator
