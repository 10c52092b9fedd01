// Auto: every candidate strategy within what the manifest fixes, predicted by the cost model
// (cost_model.h) and ranked by step time; the first one is Auto's choice.
//
// Candidates: each of AutoDist's eight builders, with the options that change the traffic —
// fusion chunk sizes for the all-reduce builders, the local proxy where a worker has several
// replicas, and, only when the manifest allows lossy compression, the error-feedback compressors
// (float16, PowerSGD rank 1, TopK 1%) for all-reduce groups and parameter-server pushes.
// Candidates that compile to the same strategy are kept once. Auto never changes the number of
// pods, nor sync and staleness when the user sets them; with staleness or asynchronous updates
// only the parameter-server builders are candidates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/strategy.pb.h"
#include "runtime/graph/variable.h"
#include "runtime/strategy/builder.h"
#include "runtime/strategy/builder_options.h"
#include "runtime/strategy/cost_model.h"
#include "runtime/strategy/resource_spec.h"
#include "runtime/strategy/step_profile.h"

namespace autodist::strategy {

// Options Auto takes (what it must keep): sync and staleness, as the PS family reads them.
struct AutoOptions {
  BuilderOptions fixed;  // the given sync / staleness, passed to every PS-family candidate
  bool sync = true;
  int staleness = 0;
};

// Throws InvalidArgument for any other option, or a bad value, naming it.
AutoOptions ReadAutoOptions(const BuilderOptions& options);

struct AutoInputs {
  AutoOptions options;
  bool allow_lossy_compression = false;
  StepProfile profile;
  NetworkAssumptions network;
  OptimizerTraits optimizer;
};

struct Candidate {
  std::string builder;
  BuilderOptions options;  // what the candidate sets beyond the builder's defaults
  // "AllReduce chunk_size=16 compressor=PowerSGDCompressor"
  std::string Label() const;
};

// A lossy compressor changes what the model learns, so a candidate with one ranks as if its
// step took this share longer: it wins only where it is clearly faster, not on a near tie with
// an exact candidate. (Its compute on busy cores is also the least certain cost: near ties were
// measured either way, performance.md, "Auto: predicted against measured".)
inline constexpr double kLossyCompressionMargin = 0.05;

// Predictions closer than this share are a tie. Auto departs from plain AllReduce (fused, exact,
// no proxy: what DDP and Horovod users run) only for a predicted gain beyond it: where plain
// AllReduce is predicted within it of the fastest candidate (lossy ones with
// kLossyCompressionMargin), Auto takes plain AllReduce. Variants of all-reduce that differ only
// in grouping or partitioning were predicted within 1% of it and measured up to 17% apart
// either way in one grid row (performance.md, "Ninth full grid").
inline constexpr double kNearTieMargin = 0.01;

// Whether the candidate compresses lossily (any compressor option).
bool IsLossy(const Candidate& candidate);

struct RankedCandidate {
  Candidate candidate;
  StepPrediction prediction;
  autodist::proto::Strategy strategy;  // without id (the compiler sets it on the chosen one)
};

// The candidates in a fixed order (the tie-break of equal predictions).
std::vector<Candidate> AutoCandidates(const ResourceSpec& resources, const AutoInputs& inputs);

// Compiles and predicts every candidate; returns them fastest first (lossy ones by their step
// and kLossyCompressionMargin), each distinct strategy once, except that plain AllReduce in a
// near tie with the fastest (kNearTieMargin) comes first. `build` compiles one candidate
// (Compile's builder table).
using CandidateBuild = std::function<autodist::proto::Strategy(const Candidate&)>;
std::vector<RankedCandidate> RankCandidates(const std::vector<graph::Variable>& variables,
                                            const ResourceSpec& resources, const AutoInputs& inputs,
                                            const CandidateBuild& build);

// The ranked table `autodist compile --explain` prints: candidate, predicted compute,
// communication and total per step, and the busiest link's bytes per step. `by_auto` false: the
// one strategy a named builder compiled, predicted by the same model.
std::string FormatRanking(const std::vector<RankedCandidate>& ranking, const AutoInputs& inputs,
                          const ResourceSpec& resources, bool by_auto = true);

// Why Auto chose ranking[0], in one sentence, beside AutoDist's default (PSLoadBalancing) and
// plain AllReduce when they were candidates.
std::string AutoReason(const std::vector<RankedCandidate>& ranking);

}  // namespace autodist::strategy
