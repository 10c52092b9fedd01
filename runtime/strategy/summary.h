// A short human summary of a compiled Strategy: what `autodist compile` prints after it and
// what the operator shows in the job's status.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/strategy.pb.h"
#include "runtime/graph/variable.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::strategy {

struct StrategySummary {
  int replicas = 0;
  int variables = 0;              // node_config entries
  int partitioned_variables = 0;  // nodes with a partitioner
  int shards = 0;                 // synchronized units: parts of partitioned nodes, else nodes
  int ps_shards = 0;              // units synchronized through a parameter server
  int allreduce_shards = 0;       // units synchronized through all-reduce
  int allreduce_groups = 0;       // distinct fusion groups
  // Bytes hosted per parameter server, in PS-candidate order (all candidates, even empty ones,
  // followed by destinations outside the candidate list, if any).
  std::vector<std::pair<std::string, int64_t>> bytes_per_ps;
};

// Summarizes `strategy` for `variables` (to size shards). Throws InvalidArgument when a node
// names an unknown variable or has a malformed partitioner.
StrategySummary Summarize(const autodist::proto::Strategy& strategy,
                          const std::vector<graph::Variable>& variables,
                          const ResourceSpec& resources);

// Multi-line text: one "key: value" line each, bytes per PS indented below.
std::string FormatSummary(const StrategySummary& summary, const std::string& builder);

// "1.5 MiB" style byte counts.
std::string FormatBytes(int64_t bytes);

}  // namespace autodist::strategy
