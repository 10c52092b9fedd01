#include "runtime/strategy/auto_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "runtime/common/error.h"
#include "runtime/strategy/summary.h"

namespace autodist::strategy {
namespace {

// Fusion: one collective per variable, a few, or (AutoDist's default, 128) nearly all at once.
constexpr std::array<int, 4> kChunkSizes = {1, 4, 16, 128};
constexpr const char* kDefaultBuilder = "PSLoadBalancing";  // AutoDist's default strategy

const std::vector<std::string>& PsFamily() {
  static const auto* names =
      new std::vector<std::string>{"PSLoadBalancing", "PS", "PartitionedPS", "UnevenPartitionedPS"};
  return *names;
}

// What a candidate ranks by: its step, lossy ones kLossyCompressionMargin longer, in whole
// nanoseconds, then the candidates' order: a last-bit difference between two machines' floating
// point cannot reorder two candidates.
int64_t RankNanoseconds(const RankedCandidate& entry) {
  const double margin = IsLossy(entry.candidate) ? 1 + kLossyCompressionMargin : 1;
  return std::llround(entry.prediction.total_seconds * margin * 1e9);
}

// Whether the candidate is plain AllReduce: fused by AutoDist's default chunk size (128), no
// compressor, no proxy.
bool IsPlainAllReduce(const Candidate& candidate) {
  const auto chunk = candidate.options.find("chunk_size");
  return candidate.builder == "AllReduce" && candidate.options.size() == 1 &&
         chunk != candidate.options.end() && chunk->second == std::to_string(kChunkSizes.back());
}

bool SeveralReplicasPerWorker(const ResourceSpec& resources) {
  const std::vector<std::string> replicas = resources.Replicas();
  std::set<std::string> nodes;
  for (const std::string& replica : replicas) nodes.insert(replica.substr(0, replica.find(':')));
  return replicas.size() > nodes.size();
}

std::string Milliseconds(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

}  // namespace

AutoOptions ReadAutoOptions(const BuilderOptions& options) {
  OptionReader reader("Auto", options);
  AutoOptions result;
  result.sync = reader.Bool("sync", true);
  result.staleness = reader.Int("staleness", 0, 0);
  reader.RejectUnread();
  AD_CHECK(result.sync || result.staleness == 0, kInvalidArgument,
           "builder Auto: option staleness={} needs sync=true (bounded staleness is a kind of "
           "synchronous training)",
           result.staleness);
  for (const auto& [key, value] : options) result.fixed[key] = value;
  return result;
}

bool IsLossy(const Candidate& candidate) {
  // Every compressor Auto tries is lossy (AutoCandidates).
  return candidate.options.contains("compressor");
}

std::string Candidate::Label() const {
  std::string label = builder;
  for (const auto& [key, value] : options) label += fmt::format(" {}={}", key, value);
  return label;
}

std::vector<Candidate> AutoCandidates(const ResourceSpec& resources, const AutoInputs& inputs) {
  const bool lossy = inputs.allow_lossy_compression;
  const bool synchronous = inputs.options.sync && inputs.options.staleness == 0;
  std::vector<std::string> push_compressors = {""};
  if (lossy)
    push_compressors.insert(push_compressors.end(), {"HorovodCompressorEF", "TopKCompressorEF"});
  std::vector<std::string> proxies = {""};
  if (SeveralReplicasPerWorker(resources)) proxies.emplace_back("true");

  std::vector<Candidate> candidates;
  // All-reduce first: where a Parallax strategy equals an AllReduce one (no sparse variables),
  // the plainer name is the one kept.
  if (synchronous) {
    std::vector<std::string> group_compressors = {""};
    if (lossy) {
      group_compressors.insert(group_compressors.end(),
                               {"HorovodCompressorEF", "PowerSGDCompressor", "TopKCompressorEF"});
    }
    for (const std::string& compressor : group_compressors) {
      for (const int chunk : kChunkSizes) {
        BuilderOptions options{{"chunk_size", std::to_string(chunk)}};
        if (!compressor.empty()) options["compressor"] = compressor;
        candidates.push_back({"AllReduce", options});
      }
    }
  }
  const auto ps_options = [&](const std::string& proxy, const std::string& compressor) {
    BuilderOptions options = inputs.options.fixed;
    if (!proxy.empty()) options["local_proxy_variable"] = proxy;
    if (!compressor.empty()) options["compressor"] = compressor;
    return options;
  };
  for (const std::string& builder : PsFamily()) {
    for (const std::string& proxy : proxies) {
      for (const std::string& compressor : push_compressors) {
        candidates.push_back({builder, ps_options(proxy, compressor)});
      }
    }
  }
  if (!synchronous) return candidates;
  // Parallax all-reduces dense variables: synchronous training only, like the other all-reduce
  // builders, so that a staleness the user set is never taken away.
  for (const std::string& proxy : proxies) {
    for (const int chunk : kChunkSizes) {
      BuilderOptions options = ps_options(proxy, "");
      options["chunk_size"] = std::to_string(chunk);
      candidates.push_back({"Parallax", options});
    }
  }
  {
    for (const char* builder : {"PartitionedAR", "RandomAxisPartitionAR"}) {
      for (const int chunk : kChunkSizes) {
        candidates.push_back({builder, {{"chunk_size", std::to_string(chunk)}}});
      }
    }
  }
  return candidates;
}

std::vector<RankedCandidate> RankCandidates(const std::vector<graph::Variable>& variables,
                                            const ResourceSpec& resources, const AutoInputs& inputs,
                                            const CandidateBuild& build) {
  std::vector<RankedCandidate> ranked;
  std::map<std::string, std::string> label_of;  // strategy content -> the label it is ranked by
  std::string plain_label;                      // plain AllReduce's strategy under its ranked label
  for (const Candidate& candidate : AutoCandidates(resources, inputs)) {
    autodist::proto::Strategy strategy = build(candidate);
    std::string content;
    strategy.SerializeToString(&content);
    const auto [known, added] = label_of.emplace(content, candidate.Label());
    if (IsPlainAllReduce(candidate)) plain_label = known->second;
    if (!added) continue;  // the same strategy as an earlier candidate
    StepPrediction prediction = PredictStep(strategy, variables, resources, inputs.profile,
                                            inputs.network, inputs.optimizer);
    ranked.push_back({candidate, std::move(prediction), std::move(strategy)});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    return RankNanoseconds(a) < RankNanoseconds(b);
  });
  // Plain AllReduce in a near tie with the fastest is taken instead: it moves to the front.
  if (ranked.empty()) return ranked;
  const double tie = static_cast<double>(RankNanoseconds(ranked.front())) * (1 + kNearTieMargin);
  for (auto it = ranked.begin(); it != ranked.end(); ++it) {
    if (static_cast<double>(RankNanoseconds(*it)) > tie) break;
    if (it->candidate.Label() == plain_label) {
      std::rotate(ranked.begin(), it, it + 1);
      break;
    }
  }
  return ranked;
}

std::string FormatRanking(const std::vector<RankedCandidate>& ranking, const AutoInputs& inputs,
                          const ResourceSpec& resources, bool by_auto) {
  std::set<double> rates;
  for (const NodeSpec& node : resources.nodes()) {
    rates.insert(node.network_bandwidth.value_or(inputs.network.default_gbps));
  }
  std::string links;
  for (const double rate : rates) links += fmt::format("{}{:g}", links.empty() ? "" : "/", rate);
  const StepProfile& profile = inputs.profile;
  std::string out = by_auto
                        ? fmt::format(
                              "Auto: {} candidates ranked by predicted step time (within {:g}% of "
                              "the fastest, plain AllReduce first)\n",
                              ranking.size(), kNearTieMargin * 100)
                        : std::string("Predicted step time (the cost model Auto uses)\n");
  out += fmt::format(
      "  step profile: {} (batch {} per replica, {} replica(s) per worker); links {} Gbit/s, "
      "{:g} us per message; lossy compression {}\n",
      profile.source, profile.batch_per_replica, profile.replicas_per_worker, links,
      inputs.network.latency_seconds * 1e6,
      inputs.allow_lossy_compression
          ? fmt::format("allowed (ranked as if {:g}% slower)", kLossyCompressionMargin * 100)
          : std::string("not allowed (spec.strategy.allowLossyCompression)"));
  if (!profile.sparse_rows.empty()) {
    out += inputs.optimizer.sparse_updates_change_only_present_rows
               ? "  sparse tables: parameter servers send back the rows a step changed (the "
                 "optimizer leaves absent rows alone)\n"
               : "  sparse tables: parameter servers send back whole tables (the optimizer moves "
                 "absent rows too, or is not known)\n";
  }
  size_t width = 9;
  for (const RankedCandidate& entry : ranking)
    width = std::max(width, entry.candidate.Label().size());
  out += fmt::format("{:>3}  {:<{}}  {:>12}  {:>13}  {:>12}  {}\n", "#", "candidate", width,
                     "compute", "communication", "total", "busiest link per step");
  for (size_t i = 0; i < ranking.size(); ++i) {
    const RankedCandidate& entry = ranking[i];
    const auto [node, bytes] = entry.prediction.BusiestLink();
    out += fmt::format(
        "{:>3}  {:<{}}  {:>12}  {:>13}  {:>12}  {}\n", i + 1, entry.candidate.Label(), width,
        Milliseconds(entry.prediction.compute_seconds),
        Milliseconds(entry.prediction.communication_seconds),
        Milliseconds(entry.prediction.total_seconds),
        node.empty() ? std::string("-") : fmt::format("{} {}", node, FormatBytes(bytes)));
  }
  return out;
}

std::string AutoReason(const std::vector<RankedCandidate>& ranking) {
  AD_CHECK(!ranking.empty(), kInternal, "Auto ranked no candidate");
  const RankedCandidate& best = ranking.front();
  std::string reason = fmt::format("Auto chose {}: predicted {} per step, ", best.candidate.Label(),
                                   Milliseconds(best.prediction.total_seconds));
  // A near tie taken over the fastest (RankCandidates) says which it was.
  if (ranking.size() > 1 && RankNanoseconds(ranking[1]) < RankNanoseconds(best)) {
    reason += fmt::format("within {:g}% of the lowest ({}, {}) and plain, of {} candidates",
                          kNearTieMargin * 100, ranking[1].candidate.Label(),
                          Milliseconds(ranking[1].prediction.total_seconds), ranking.size());
  } else {
    reason += fmt::format("the lowest of {} candidates", ranking.size());
  }
  for (const char* peer : {kDefaultBuilder, "AllReduce"}) {
    // The peer without compression or proxy (the fastest of its fusion chunk sizes).
    const auto it = std::find_if(ranking.begin(), ranking.end(), [&](const RankedCandidate& c) {
      return c.candidate.builder == peer && !c.candidate.options.contains("compressor") &&
             !c.candidate.options.contains("local_proxy_variable");
    });
    if (it == ranking.end() || it == ranking.begin()) continue;
    reason += fmt::format("; {} {}", peer, Milliseconds(it->prediction.total_seconds));
  }
  return reason;
}

}  // namespace autodist::strategy
