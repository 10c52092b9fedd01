// What the cost model (cost_model.h) knows of one training step apart from the network: how long
// a worker computes, when each gradient becomes final during backward, how many rows of each
// sparse table a step touches, and the fixed costs of the runtime's collectives, parameter-server
// rounds and compressors.
//
// `autodist profile` measures it on the actual model and batch and writes it as JSON; `autodist
// compile --profile`, the chief and the operator read that file. Without one, every one of them
// falls back to the same estimate from the variables (EstimateStepProfile), so the same inputs
// give the same strategy everywhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/graph/variable.h"

namespace autodist::strategy {

struct StepProfile {
  std::string source;  // "measured" (autodist profile) or "estimated" (from the variables)
  int64_t batch_per_replica = 0;
  int replicas_per_worker = 1;
  // One worker process's step over all its replicas, in seconds.
  double forward_seconds = 0;
  double backward_seconds = 0;
  double update_seconds = 0;  // the optimizer over every variable, on one worker
  // variable -> the fraction of backward elapsed when its gradient is final, in [0, 1].
  std::map<std::string, double> ready_fraction;
  // sparse variable -> unique rows one replica's step touches (mean).
  std::map<std::string, double> sparse_rows;
  // Fixed costs beyond the wire: one collective (thread hand-offs, the algorithm's set-up), one
  // parameter-server Step round, and per float32 element compressed and decompressed (by
  // compressor name as the options spell it: HorovodCompressor, ...).
  double collective_seconds = 0;
  double ps_round_seconds = 0;
  std::map<std::string, double> compress_seconds_per_element;
  // What a large all-reduce between two ranks moved per second over this machine's loopback,
  // in Gbit/s (0: not measured): `autodist profile` predicts its calibration runs with it.
  double loopback_gbps = 0;
  // What a step that all-reduces costs in a job of several workers beyond its compute and
  // collectives (the synchronizer's launch, gathering and scattering sparse rows, the other
  // worker's threads on shared cores): `autodist profile`'s calibration measures it on its
  // all-reduce runs, 0 without. A parameter-server step's own cost is ps_round_seconds,
  // measured on its parameter-server run: the two paths have little in common, and a sparse
  // table's gathers made this several times a PS step (performance.md, "Auto").
  double all_reduce_overhead_seconds = 0;
  // The share of a link's payload rate (cost_model.h) reached while the link carries data both
  // ways at once, in a job on the calibration network, in (0, 1]: the acknowledgements of what
  // a node receives share its sending direction, and a collective's phases wait on each other.
  // Every collective does; a parameter-server phase where a node both sends and receives does.
  // 1 without calibration.
  double duplex_efficiency = 1;
  // The share of its speed a collective keeps while backward still computes, in (0, 1]: the
  // cores are busy with backward (and, where workers share a machine, with each other's), so a
  // collective overlapping it is scheduled late and its pipeline stalls. Calibration measures
  // it from runs that overlap more or less; 1 without.
  double overlap_efficiency = 1;
  // The share of a parameter-server step's wire (its push and pull phases, each as long as its
  // busiest link needs) that the step waits for beyond ps_round_seconds, in (0, 1]: a server
  // deserializes, sums, updates and serializes what has arrived while the rest is still on the
  // wire, so that serving work (in ps_round_seconds) hides part of the wire. Calibration
  // measures it from a PS run and a PartitionedPS run, which serve the same bytes over busiest
  // links half as loaded; 1 without.
  double ps_wire_share = 1;

  bool operator==(const StepProfile&) const = default;
};

// The defaults of the fixed costs, measured on the development machine (docs/strategies.md):
// the collective's and the round's latencies of small messages on loopback, and each
// compressor's pass over a 1 Mi-element group.
StepProfile DefaultRuntimeCosts();

// The estimate without a profile: 6 FLOPs per dense parameter and sample (forward 2, backward
// 4), sparse tables none, at `flops_per_second` per worker (documented defaults for CPU and GPU
// workers); the update at 2 ns per parameter; gradients final in reverse model order, each at the
// share of parameters that backward has passed; one row per sample of each sparse table.
StepProfile EstimateStepProfile(const std::vector<graph::Variable>& variables,
                                int64_t batch_per_replica, int replicas_per_worker,
                                bool gpu_workers);

// JSON, as `autodist profile` writes it (docs/strategies.md lists the fields).
std::string StepProfileToJson(const StepProfile& profile);
// Throws InvalidArgument naming `source` and the field for malformed JSON, a missing or negative
// time, a fraction outside [0, 1] or an unknown version.
StepProfile StepProfileFromJson(const std::string& text, const std::string& source);
StepProfile ReadStepProfile(const std::string& path);

// Throws InvalidArgument naming `source` when the profile was taken on another model (a variable
// of one is missing from the other, or a sparse table has no row count) or at another batch size
// or replica count than `batch_per_replica` / `replicas_per_worker` (0: not checked).
void CheckProfileMatches(const StepProfile& profile, const std::vector<graph::Variable>& variables,
                         int64_t batch_per_replica, int replicas_per_worker,
                         const std::string& source);

}  // namespace autodist::strategy
