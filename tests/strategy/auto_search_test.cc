// Auto: the candidates respect what the manifest fixes (lossy compression, sync, staleness),
// the choice is the fastest prediction (or plain AllReduce in a near tie with it), and the same
// inputs give the same strategy.
#include "runtime/strategy/auto_search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/common/error.h"
#include "runtime/strategy/compiler.h"
#include "tests/error_of.h"
#include "tests/strategy/test_support.h"

namespace autodist::strategy {
namespace {

using autodist::testing::ErrorOf;
using testing::FloatVariable;
using ::testing::HasSubstr;

const std::vector<graph::Variable> kDense = {
    FloatVariable("fc1.weight", {512, 784}), FloatVariable("fc1.bias", {512}),
    FloatVariable("fc2.weight", {10, 512}), FloatVariable("fc2.bias", {10})};

ResourceSpec Nodes(int workers, int replicas, int ps, double gbps) {
  ReplicaCounts counts;
  counts.workers = workers;
  counts.replicas_per_worker = replicas;
  counts.parameter_servers = ps;
  counts.network_bandwidth = gbps;
  return ResourceSpec::FromReplicaCounts(counts);
}

CompileResult CompileAuto(const std::vector<graph::Variable>& variables,
                          const ResourceSpec& resources, bool lossy,
                          const BuilderOptions& options = {}) {
  CompileRequest request;
  request.options = options;
  request.allow_lossy_compression = lossy;
  return Compile(variables, resources, request);
}

TEST(AutoSearchTest, LossyCompressorsOnlyWhenAllowed) {
  AutoInputs inputs;
  for (const Candidate& candidate : AutoCandidates(Nodes(2, 1, 1, 1), inputs)) {
    EXPECT_FALSE(candidate.options.contains("compressor")) << candidate.Label();
  }
  inputs.allow_lossy_compression = true;
  std::set<std::string> labels;
  for (const Candidate& candidate : AutoCandidates(Nodes(2, 1, 1, 1), inputs)) {
    labels.insert(candidate.Label());
  }
  EXPECT_TRUE(labels.contains("AllReduce chunk_size=16 compressor=PowerSGDCompressor"));
  EXPECT_TRUE(labels.contains("PSLoadBalancing compressor=HorovodCompressorEF"));
  EXPECT_TRUE(labels.contains("PS compressor=TopKCompressorEF"));
  EXPECT_TRUE(labels.contains("Parallax chunk_size=128"));
}

TEST(AutoSearchTest, StalenessAndSyncAreKeptAndRuleOutAllReduce) {
  AutoInputs inputs;
  inputs.options = ReadAutoOptions({{"staleness", "2"}});
  const std::vector<Candidate> candidates = AutoCandidates(Nodes(2, 1, 1, 1), inputs);
  ASSERT_FALSE(candidates.empty());
  for (const Candidate& candidate : candidates) {
    EXPECT_THAT(candidate.builder,
                ::testing::AnyOf("PS", "PSLoadBalancing", "PartitionedPS", "UnevenPartitionedPS"));
    EXPECT_EQ(candidate.options.at("staleness"), "2") << candidate.Label();
  }
  const CompileResult result = CompileAuto(kDense, Nodes(2, 1, 1, 1), true, {{"staleness", "2"}});
  EXPECT_EQ(result.strategy.node_config(0).pssynchronizer().staleness(), 2);
}

TEST(AutoSearchTest, ProxyCandidatesOnlyWithSeveralReplicasPerWorker) {
  const auto has_proxy = [](const ResourceSpec& nodes) {
    for (const Candidate& candidate : AutoCandidates(nodes, AutoInputs{})) {
      if (candidate.options.contains("local_proxy_variable")) return true;
    }
    return false;
  };
  EXPECT_FALSE(has_proxy(Nodes(2, 1, 0, 1)));
  EXPECT_TRUE(has_proxy(Nodes(2, 2, 0, 1)));
}

TEST(AutoSearchTest, ChoosesTheFastestPredictionAndExplainsIt) {
  const ResourceSpec nodes = Nodes(2, 1, 1, 1);
  const CompileResult result = CompileAuto(kDense, nodes, false);
  ASSERT_GE(result.ranking.size(), 5U);
  for (size_t i = 1; i < result.ranking.size(); ++i) {
    EXPECT_LE(result.ranking[i - 1].prediction.total_seconds,
              result.ranking[i].prediction.total_seconds);
  }
  const RankedCandidate& best = result.ranking.front();
  EXPECT_EQ(result.builder, best.candidate.builder);
  ASSERT_TRUE(result.predicted_step_seconds.has_value());
  EXPECT_DOUBLE_EQ(*result.predicted_step_seconds, best.prediction.total_seconds);
  autodist::proto::Strategy chosen = result.strategy;
  chosen.clear_id();
  EXPECT_EQ(chosen.SerializeAsString(), best.strategy.SerializeAsString());
  // At 1 Gbit/s, dense gradients are all-reduced: a ring moves less over the busiest link than
  // one server taking every worker's whole push.
  EXPECT_THAT(best.candidate.builder,
              ::testing::AnyOf("AllReduce", "PartitionedAR", "RandomAxisPartitionAR"));
  EXPECT_THAT(result.reason, HasSubstr("Auto chose " + best.candidate.Label() + ": predicted"));
  EXPECT_THAT(result.reason, HasSubstr("; PSLoadBalancing "));
  const std::string table = FormatRanking(result.ranking, result.auto_inputs, nodes);
  EXPECT_THAT(table, HasSubstr(std::to_string(result.ranking.size()) + " candidates ranked"));
  EXPECT_THAT(table, HasSubstr("links 1 Gbit/s"));
  EXPECT_THAT(table, HasSubstr("  1  " + best.candidate.Label()));
}

TEST(AutoSearchTest, OnASlowLinkLossyCompressionWinsWhereAllowed) {
  const ResourceSpec slow = Nodes(2, 1, 0, 0.1);
  const CompileResult exact = CompileAuto(kDense, slow, false);
  const CompileResult lossy = CompileAuto(kDense, slow, true);
  EXPECT_FALSE(exact.ranking.front().candidate.options.contains("compressor"));
  EXPECT_TRUE(lossy.ranking.front().candidate.options.contains("compressor"))
      << lossy.ranking.front().candidate.Label();
  EXPECT_LT(*lossy.predicted_step_seconds, *exact.predicted_step_seconds);
}

// A lossy candidate must beat the exact ones by kLossyCompressionMargin: on a near tie the exact
// one is chosen, and the table says how lossy candidates rank.
TEST(AutoSearchTest, LossyCompressionWinsOnlyBeyondItsMargin) {
  // From links where compression wins by far to links where it loses: somewhere between, a
  // lossy candidate is faster by less than the margin, and the exact one is chosen.
  int near_ties = 0;
  for (double gbps = 0.5; gbps < 50; gbps *= 1.03) {
    const ResourceSpec nodes = Nodes(2, 1, 0, gbps);
    const double best_exact = *CompileAuto(kDense, nodes, false).predicted_step_seconds;
    const CompileResult lossy = CompileAuto(kDense, nodes, true);
    const RankedCandidate& chosen = lossy.ranking.front();
    if (IsLossy(chosen.candidate)) {
      EXPECT_LT(chosen.prediction.total_seconds * (1 + kLossyCompressionMargin), best_exact)
          << gbps << " Gbit/s: " << chosen.candidate.Label();
      continue;
    }
    // The exact candidates' near tie (kNearTieMargin) may be taken from among fewer of them.
    const double chosen_seconds = chosen.prediction.total_seconds;
    EXPECT_LE(chosen_seconds, best_exact * (1 + kNearTieMargin)) << gbps << " Gbit/s";
    for (const RankedCandidate& entry : lossy.ranking) {
      if (!IsLossy(entry.candidate)) continue;
      EXPECT_GE(
          entry.prediction.total_seconds * (1 + kLossyCompressionMargin) * (1 + kNearTieMargin),
          chosen_seconds)
          << gbps << " Gbit/s: " << entry.candidate.Label();
      if (entry.prediction.total_seconds < chosen_seconds) ++near_ties;
    }
  }
  EXPECT_GT(near_ties, 0);
  AutoInputs inputs;
  inputs.allow_lossy_compression = true;
  EXPECT_THAT(FormatRanking(CompileAuto(kDense, Nodes(2, 1, 0, 1), true).ranking, inputs,
                            Nodes(2, 1, 0, 1)),
              HasSubstr("lossy compression allowed (ranked as if 5% slower)"));
}

// A CNN's shapes: many small variables, one large, ready at different times.
const std::vector<graph::Variable> kConvolutional = {FloatVariable("conv1.weight", {32, 1, 3, 3}),
                                                     FloatVariable("conv1.bias", {32}),
                                                     FloatVariable("conv2.weight", {64, 32, 3, 3}),
                                                     FloatVariable("conv2.bias", {64}),
                                                     FloatVariable("bn.weight", {64}),
                                                     FloatVariable("bn.bias", {64}),
                                                     FloatVariable("fc1.weight", {128, 3136}),
                                                     FloatVariable("fc1.bias", {128}),
                                                     FloatVariable("fc2.weight", {10, 128}),
                                                     FloatVariable("fc2.bias", {10})};

TEST(AutoSearchTest, PlainAllReduceInANearTieWithTheFastestIsTaken) {
  int taken_over_the_fastest = 0;
  int plain_ahead = 0;
  for (double gbps = 0.5; gbps < 50; gbps *= 1.03) {
    for (const bool lossy : {false, true}) {
      for (const auto* model : {&kDense, &kConvolutional}) {
        const ResourceSpec nodes = Nodes(2, 1, 0, gbps);
        CompileRequest request;
        request.builder = "AllReduce";  // AutoDist's default chunk size, no compressor
        autodist::proto::Strategy plain_strategy = Compile(*model, nodes, request).strategy;
        plain_strategy.clear_id();  // ranked strategies have none
        const std::string plain = plain_strategy.SerializeAsString();
        const std::vector<RankedCandidate> ranking = CompileAuto(*model, nodes, lossy).ranking;
        const auto ranked_seconds = [](const RankedCandidate& entry) {
          return entry.prediction.total_seconds *
                 (IsLossy(entry.candidate) ? 1 + kLossyCompressionMargin : 1.0);
        };
        double fastest = ranked_seconds(ranking.front());
        double plain_seconds = -1;
        for (const RankedCandidate& entry : ranking) {
          fastest = std::min(fastest, ranked_seconds(entry));
          RankedCandidate copy = entry;
          copy.strategy.clear_id();
          if (copy.strategy.SerializeAsString() == plain) plain_seconds = ranked_seconds(entry);
        }
        ASSERT_GT(plain_seconds, 0) << gbps << " Gbit/s: plain AllReduce is not ranked";
        const RankedCandidate& chosen = ranking.front();
        const bool near_tie = plain_seconds <= fastest * (1 + kNearTieMargin);
        RankedCandidate chosen_copy = chosen;
        chosen_copy.strategy.clear_id();
        EXPECT_EQ(chosen_copy.strategy.SerializeAsString() == plain, near_tie)
            << gbps << " Gbit/s: chose " << chosen.candidate.Label();
        if (!near_tie) {
          EXPECT_DOUBLE_EQ(ranked_seconds(chosen), fastest) << gbps << " Gbit/s";
          continue;
        }
        ++plain_ahead;
        if (plain_seconds > fastest) {
          ++taken_over_the_fastest;
          EXPECT_THAT(AutoReason(ranking), HasSubstr("within 1% of the lowest")) << gbps;
        }
      }
    }
  }
  EXPECT_GT(plain_ahead, 0);
  EXPECT_GT(taken_over_the_fastest, 0);
}

TEST(AutoSearchTest, TheSameInputsGiveTheSameStrategy) {
  const CompileResult first = CompileAuto(kDense, Nodes(3, 2, 2, 2.5), true);
  const CompileResult second = CompileAuto(kDense, Nodes(3, 2, 2, 2.5), true);
  EXPECT_EQ(first.strategy.id(), second.strategy.id());
  ASSERT_EQ(first.ranking.size(), second.ranking.size());
  for (size_t i = 0; i < first.ranking.size(); ++i) {
    EXPECT_EQ(first.ranking[i].candidate.Label(), second.ranking[i].candidate.Label());
  }
  // Each distinct strategy is ranked once.
  std::set<std::string> contents;
  for (const RankedCandidate& entry : first.ranking) {
    EXPECT_TRUE(contents.insert(entry.strategy.SerializeAsString()).second)
        << entry.candidate.Label();
  }
}

TEST(AutoSearchTest, AutoTakesOnlySyncAndStaleness) {
  EXPECT_THAT(
      ErrorOf([] {
        ReadAutoOptions({{"chunk_size", "4"}});
      }).what(),
      HasSubstr("builder Auto does not take option 'chunk_size'; it takes: staleness, sync"));
  EXPECT_THAT(ErrorOf([] {
                ReadAutoOptions({{"sync", "false"}, {"staleness", "1"}});
              }).what(),
              HasSubstr("staleness=1 needs sync=true"));
  EXPECT_THAT(ErrorOf([] {
                ReadAutoOptions({{"staleness", "-1"}});
              }).what(),
              HasSubstr("staleness must be >= 0"));
}

TEST(AutoSearchTest, ColocationBindsServersAndIsIgnoredByAllReduce) {
  CompileRequest request;
  request.colocation = {{"fc1.weight", "fc2.weight"}};
  const CompileResult result = Compile(kDense, Nodes(2, 1, 2, 1), request);
  if (result.strategy.node_config(0).has_pssynchronizer()) {
    EXPECT_EQ(result.strategy.node_config(0).pssynchronizer().reduction_destination(),
              result.strategy.node_config(2).pssynchronizer().reduction_destination());
  } else {
    EXPECT_THAT(result.note, HasSubstr("colocation groups ignored (no parameter servers)"));
  }
}

}  // namespace
}  // namespace autodist::strategy
