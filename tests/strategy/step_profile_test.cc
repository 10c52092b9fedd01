// Step profiles: the JSON `autodist profile` writes read back as written, every bad field named,
// the estimate's shape, and a profile of another model or batch refused.
#include "runtime/strategy/step_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "tests/error_of.h"
#include "tests/strategy/test_support.h"

namespace autodist::strategy {
namespace {

using autodist::testing::ErrorOf;
using testing::FloatVariable;
using ::testing::HasSubstr;

const std::vector<graph::Variable> kModel = {FloatVariable("fc1.weight", {256, 784}),
                                             FloatVariable("fc1.bias", {256}),
                                             FloatVariable("emb", {1000, 16}, true)};

StepProfile Measured() {
  StepProfile profile = DefaultRuntimeCosts();
  profile.source = "measured";
  profile.batch_per_replica = 32;
  profile.replicas_per_worker = 2;
  profile.forward_seconds = 0.001;
  profile.backward_seconds = 0.002;
  profile.update_seconds = 0.0005;
  profile.ready_fraction = {{"fc1.weight", 1.0}, {"fc1.bias", 0.9}, {"emb", 0.0}};
  profile.sparse_rows = {{"emb", 31.5}};
  profile.loopback_gbps = 25.5;
  profile.duplex_efficiency = 0.75;
  profile.overlap_efficiency = 0.5;
  profile.ps_wire_share = 0.625;
  profile.all_reduce_overhead_seconds = 0.004;
  return profile;
}

TEST(StepProfileTest, JsonReadsBackAsWritten) {
  const StepProfile profile = Measured();
  EXPECT_EQ(StepProfileFromJson(StepProfileToJson(profile), "p.json"), profile);
}

TEST(StepProfileTest, AnEarlierProfilesStepOverheadIsAllReducesOverhead) {
  // Written before parameter-server steps stopped paying it, under another name.
  std::string text = StepProfileToJson(Measured());
  const std::string key = "\"allReduceOverheadSeconds\"";
  text.replace(text.find(key), key.size(), "\"stepOverheadSeconds\"");
  const StepProfile read = StepProfileFromJson(text, "p.json");
  EXPECT_EQ(read.all_reduce_overhead_seconds, 0.004);
  // Its round was calibrated while the step paid the overhead: it keeps paying it.
  EXPECT_DOUBLE_EQ(read.ps_round_seconds, Measured().ps_round_seconds + 0.004);
}

TEST(StepProfileTest, AProfileWrittenBeforeTheWireShareWaitsForAllTheWire) {
  std::string text = StepProfileToJson(Measured());
  const std::string field = ",\n  \"parameterServerWireShare\": 0.625";
  ASSERT_NE(text.find(field), std::string::npos) << text;
  text.erase(text.find(field), field.size());
  EXPECT_EQ(StepProfileFromJson(text, "p.json").ps_wire_share, 1);
}

TEST(StepProfileTest, EveryBadFieldIsNamed) {
  const std::string good = StepProfileToJson(Measured());
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> cases[] = {
      {"{ not json", "p.json: not a step profile (JSON)"},
      {"[]", "p.json: a step profile is a JSON object"},
      {with("\"version\": 1", "\"version\": 7"), "step profile version 7 is not supported"},
      {with("\"forwardSeconds\": 0.001", "\"forwardSeconds\": -1"),
       "field 'forwardSeconds' is -1: expected seconds >= 0"},
      {with("\"updateSeconds\": 0.0005", "\"updateSeconds\": \"fast\""),
       "field 'updateSeconds' is missing or not a number"},
      {with("\"fc1.bias\": 0.9", "\"fc1.bias\": 1.5"),
       "gradientReadyFraction['fc1.bias'] is 1.5: expected a number in [0, 1]"},
      {with("\"batchPerReplica\": 32", "\"batchPerReplica\": 0"),
       "field 'batchPerReplica' must be a positive integer"},
      {with("\"duplexEfficiency\": 0.75", "\"duplexEfficiency\": 0"),
       "field 'duplexEfficiency' must be a number in (0, 1], got 0"},
      {with("\"overlapEfficiency\": 0.5", "\"overlapEfficiency\": 1.5"),
       "field 'overlapEfficiency' must be a number in (0, 1], got 1.5"},
      {with("\"parameterServerWireShare\": 0.625", "\"parameterServerWireShare\": -0.5"),
       "field 'parameterServerWireShare' must be a number in (0, 1], got -0.5"},
  };
  for (const auto& [text, message] : cases) {
    const Error error = ErrorOf([&] { StepProfileFromJson(text, "p.json"); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr(message)) << text;
  }
  EXPECT_EQ(ErrorOf([] { ReadStepProfile("/nonexistent/profile.json"); }).code(),
            ErrorCode::kNotFound);
}

TEST(StepProfileTest, AProfileOfAnotherModelOrBatchIsRefused) {
  const StepProfile profile = Measured();
  CheckProfileMatches(profile, kModel, 32, 2, "p.json");  // its own: fine
  CheckProfileMatches(profile, kModel, 0, 0, "p.json");   // batch and replicas not known
  std::vector<graph::Variable> other = kModel;
  other.push_back(FloatVariable("fc2.weight", {10, 256}));
  EXPECT_THAT(ErrorOf([&] { CheckProfileMatches(profile, other, 32, 2, "p.json"); }).what(),
              HasSubstr("p.json: the profile has no gradient time for variable 'fc2.weight'"));
  other = {kModel[0], kModel[1]};
  EXPECT_THAT(ErrorOf([&] { CheckProfileMatches(profile, other, 32, 2, "p.json"); }).what(),
              HasSubstr("names variable 'emb', which the model does not have"));
  EXPECT_THAT(ErrorOf([&] { CheckProfileMatches(profile, kModel, 64, 2, "p.json"); }).what(),
              HasSubstr("measured at 32 samples per replica, the job has 64"));
  EXPECT_THAT(ErrorOf([&] { CheckProfileMatches(profile, kModel, 32, 1, "p.json"); }).what(),
              HasSubstr("measured with 2 replicas per worker, the job has 1"));
}

TEST(StepProfileTest, TheEstimateGrowsWithTheBatchAndReadiesGradientsFromTheModelsEnd) {
  const StepProfile small = EstimateStepProfile(kModel, 32, 1, false);
  const StepProfile large = EstimateStepProfile(kModel, 64, 1, false);
  EXPECT_EQ(small.source, "estimated");
  EXPECT_NEAR(large.forward_seconds, 2 * small.forward_seconds, 1e-12);
  EXPECT_NEAR(small.backward_seconds, 2 * small.forward_seconds, 1e-12);
  // Backward meets the embedding (last in model order) first, the first layer last.
  EXPECT_LT(small.ready_fraction.at("emb"), small.ready_fraction.at("fc1.bias"));
  EXPECT_LT(small.ready_fraction.at("fc1.bias"), small.ready_fraction.at("fc1.weight"));
  EXPECT_DOUBLE_EQ(small.ready_fraction.at("fc1.weight"), 1.0);
  EXPECT_DOUBLE_EQ(small.sparse_rows.at("emb"), 32);
  // A GPU computes the same FLOPs far faster.
  EXPECT_LT(EstimateStepProfile(kModel, 32, 1, true).forward_seconds, small.forward_seconds);
  CheckProfileMatches(small, kModel, 32, 1, "estimate");
}

}  // namespace
}  // namespace autodist::strategy
