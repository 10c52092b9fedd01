#include "runtime/strategy/ps_load_balancer.h"

#include <algorithm>
#include <numeric>

#include "runtime/common/error.h"

namespace autodist::strategy {

PsLoadBalancer::PsLoadBalancer(std::vector<std::string> candidates,
                               const ColocationGroups& colocation,
                               const std::vector<graph::Variable>& variables)
    : candidates_(std::move(candidates)),
      loads_(candidates_.size(), 0.0),
      groups_(colocation),
      group_device_(colocation.size()) {
  AD_CHECK(!candidates_.empty(), kInvalidArgument,
           "the resource spec has no parameter-server device (every node has role worker)");
  for (size_t group = 0; group < groups_.size(); ++group) {
    for (const std::string& member : groups_[group]) group_of_.emplace(member, group);
  }
  by_name_.reserve(variables.size());
  for (const graph::Variable& variable : variables) by_name_.emplace(variable.name, &variable);
}

size_t PsLoadBalancer::LeastLoaded() const {
  // std::min_element returns the first minimum, which is AutoDist's tie rule.
  return static_cast<size_t>(std::min_element(loads_.begin(), loads_.end()) - loads_.begin());
}

std::vector<size_t> PsLoadBalancer::LeastLoadedN(size_t count) const {
  std::vector<size_t> order(loads_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [this](size_t a, size_t b) { return loads_[a] < loads_[b]; });
  std::vector<size_t> chosen;
  chosen.reserve(count);
  while (chosen.size() < count) {
    for (const size_t device : order) {
      if (chosen.size() == count) break;
      chosen.push_back(device);
    }
  }
  return chosen;
}

std::optional<size_t> PsLoadBalancer::GroupOf(const std::string& variable) const {
  const auto it = group_of_.find(variable);
  if (it == group_of_.end()) return std::nullopt;
  return it->second;
}

}  // namespace autodist::strategy
