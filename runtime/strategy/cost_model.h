// The cost model: the predicted time of one synchronous training step under a compiled Strategy,
// from the model's variables, the machines (ResourceSpec, with each node's network_bandwidth) and
// a StepProfile (step_profile.h). Auto ranks its candidates with it (auto_search.h).
//
// What it models is what the runtime does (docs/strategies.md, "Cost model"):
//   * compute: forward and backward of a worker; the optimizer on the workers for all-reduced
//     variables and on the parameter servers (in parallel) for theirs;
//   * all-reduce: per fusion group, once its last gradient is final during backward, on one
//     communication thread in the order groups complete, at the profile's overlap efficiency
//     while backward still runs: a ring moves 2 (W-1)/W of the group's
//     wire bytes over the slowest worker link, plus 2 (W-1) message latencies and the fixed cost
//     of a collective; compressors change the wire bytes (float16 halves them, PowerSGD sends its
//     P and Q factors in two collectives, TopK all-gathers index/value pairs); row-sparse
//     gradients are all-gathered, indices and rows each with a count exchange first; links carry
//     kTcpPayloadFraction of their rate, at the profile's duplex efficiency where data crosses
//     both ways at once;
//   * parameter servers: after backward, beside the collectives: every worker pushes (sparse
//     tables: the rows a step touches), the servers apply, every worker pulls whole values (sparse
//     tables, when the optimizer leaves absent rows alone: the rows all replicas touched); each
//     phase takes the busiest link's bytes over its bandwidth (a worker's pushes to a server on
//     its own node cross no link), plus one round's latency;
//   * compression: its per-element compute, on the worker's busy cores, so never overlapped.
// The step is the later of the two, plus compression, the updates and the profile's step
// overhead.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/strategy.pb.h"
#include "runtime/graph/variable.h"
#include "runtime/strategy/resource_spec.h"
#include "runtime/strategy/step_profile.h"

namespace autodist::strategy {

// What TCP carries of a link's rate at an MTU of 1500: 1448 bytes of payload per 1514-byte frame
// (IPv4 and TCP headers with timestamps, the Ethernet header). A link of R Gbit/s moves
// R * 1e9 / 8 * kTcpPayloadFraction bytes of the runtime's messages per second.
inline constexpr double kTcpPayloadFraction = 1448.0 / 1514.0;

// What the cost model assumes of links the resource spec says nothing about.
struct NetworkAssumptions {
  double default_gbps = 10;        // a node without network_bandwidth
  double latency_seconds = 50e-6;  // one message, one way
};

// What the optimizer does that changes the traffic.
struct OptimizerTraits {
  // A sparse gradient's update leaves the rows it lacks untouched
  // (optim::SparseUpdatesChangeOnlyPresentRows: plain SGD, Adagrad, lazy_sparse): a parameter
  // server then sends a worker only the rows changed since the version it holds. Otherwise every
  // row moves each step and the worker pulls whole tables.
  bool sparse_updates_change_only_present_rows = false;
};

struct StepPrediction {
  double compute_seconds = 0;        // forward, backward and the updates
  double communication_seconds = 0;  // what the network adds to the step beyond compute
  double total_seconds = 0;
  int collectives = 0;  // collectives of one step (count exchanges included)
  int ps_rounds = 0;    // parameter-server rounds of one step (0 or 1)
  // node -> bytes its link carries in one step, sent plus received.
  std::map<std::string, int64_t> link_bytes;

  // The busiest link: its node and bytes (empty and 0 when nothing crosses a link).
  std::pair<std::string, int64_t> BusiestLink() const;
};

// Throws InvalidArgument when the strategy names a variable the model lacks.
StepPrediction PredictStep(const autodist::proto::Strategy& strategy,
                           const std::vector<graph::Variable>& variables,
                           const ResourceSpec& resources, const StepProfile& profile,
                           const NetworkAssumptions& network = {},
                           const OptimizerTraits& optimizer = {});

}  // namespace autodist::strategy
