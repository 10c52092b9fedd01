// Greedy byte load-balancing over parameter-server devices, as AutoDist does it: loads start at
// zero, ties go to the earliest device in node order. Also keeps colocation groups together.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/graph/variable.h"
#include "runtime/strategy/builder.h"

namespace autodist::strategy {

// For PlaceWhole: every member of a colocation group lives on its server.
inline bool EveryMemberCounts(const graph::Variable& /*member*/) { return true; }

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

  // Places `variable` whole. Outside any colocation group: on the least-loaded device, adding
  // its bytes. In a group: the first member reached picks the least-loaded device and adds the
  // bytes of every member for which `counts` is true (those synchronized through a PS); later
  // members reuse that device and add nothing.
  size_t PlaceWhole(const graph::Variable& variable,
                    const std::function<bool(const graph::Variable&)>& counts);

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
