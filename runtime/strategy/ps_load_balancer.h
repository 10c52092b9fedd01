// Greedy byte load-balancing over parameter-server devices, as AutoDist does it: loads start at
// zero, ties go to the earliest device in node order. Also keeps colocation groups together.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/graph/variable.h"
#include "runtime/strategy/builder.h"

namespace autodist::strategy {

class PsLoadBalancer {
 public:
  // `candidates` are the PS devices in node order; `colocation` the validated groups.
  // Throws InvalidArgument when there is no candidate.
  PsLoadBalancer(std::vector<std::string> candidates, const ColocationGroups& colocation,
                 const std::vector<graph::Variable>& variables);

  // Index of the least-loaded device (the earliest on ties).
  size_t LeastLoaded() const;

  // `count` device indices in ascending load order (stable: ties keep node order), the whole
  // list repeated when count exceeds the number of devices (AutoDist's round-robin).
  std::vector<size_t> LeastLoadedN(size_t count) const;

  void AddLoad(size_t device, double bytes) { loads_[device] += bytes; }

  // The colocation group of `variable`, if any.
  std::optional<size_t> GroupOf(const std::string& variable) const;

  // Places a colocated variable: the first member reached picks a device with `pick` and adds
  // the bytes of every member that `counts` (members synchronized through a PS); later members
  // reuse that device and add nothing.
  template <typename Pick, typename Counts>
  size_t PlaceInGroup(size_t group, Pick pick, Counts counts) {
    auto& assigned = group_device_[group];
    if (!assigned) {
      assigned = pick();
      for (const std::string& member : groups_[group]) {
        const graph::Variable& variable = *by_name_.at(member);
        if (counts(variable)) AddLoad(*assigned, static_cast<double>(variable.bytes));
      }
    }
    return *assigned;
  }

  const std::string& device(size_t index) const { return candidates_[index]; }
  const std::vector<double>& loads() const { return loads_; }

 private:
  std::vector<std::string> candidates_;
  std::vector<double> loads_;  // double, as AutoDist adds bytes / shards as floats
  std::vector<std::vector<std::string>> groups_;
  std::vector<std::optional<size_t>> group_device_;
  std::unordered_map<std::string, size_t> group_of_;
  std::unordered_map<std::string, const graph::Variable*> by_name_;
};

}  // namespace autodist::strategy
