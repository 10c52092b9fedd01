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
  // Ordering by (load, index) equals a stable sort by load, and lets partial_sort order only
  // the few devices a variable's shards need: a 64-server cluster sorts 2, not 64, per variable.
  const auto by_load = [this](size_t a, size_t b) {
    return loads_[a] < loads_[b] || (loads_[a] == loads_[b] && a < b);
  };
  std::vector<size_t> order(loads_.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t ordered = std::min(count, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(ordered),
                    order.end(), by_load);
  std::vector<size_t> chosen;
  chosen.reserve(count);
  while (chosen.size() < count) {  // more shards than servers: round-robin in greedy order
    for (size_t i = 0; i < ordered && chosen.size() < count; ++i) chosen.push_back(order[i]);
  }
  return chosen;
}

std::optional<size_t> PsLoadBalancer::GroupOf(const std::string& variable) const {
  const auto it = group_of_.find(variable);
  if (it == group_of_.end()) return std::nullopt;
  return it->second;
}

size_t PsLoadBalancer::PlaceWhole(const graph::Variable& variable,
                                  const std::function<bool(const graph::Variable&)>& counts) {
  const auto group = GroupOf(variable.name);
  if (!group) {
    const size_t device = LeastLoaded();
    AddLoad(device, static_cast<double>(variable.bytes));
    return device;
  }
  auto& assigned = group_device_[*group];
  if (!assigned) {
    assigned = LeastLoaded();
    for (const std::string& member : groups_[*group]) {
      const graph::Variable& colocated = *by_name_.at(member);
      if (counts(colocated)) AddLoad(*assigned, static_cast<double>(colocated.bytes));
    }
  }
  return *assigned;
}

}  // namespace autodist::strategy
