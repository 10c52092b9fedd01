// `autodist profile` measures a job's step (forward, backward, update, when each gradient is
// final, rows a sparse table touches); a job with builder Auto and that profile compiles with it
// in the chief and trains; a profile of another batch is refused before anything starts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "runtime/graph/graph_item.h"
#include "runtime/strategy/step_profile.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

using ::testing::HasSubstr;

// Runs `autodist profile` on `manifest`; returns its exit code.
int Profile(const std::string& manifest, const std::string& output) {
  const std::string command =
      fmt::format("'{}/autodist' profile '{}' -o '{}' --steps 4 --threads 1 > '{}.log' 2>&1",
                  AUTODIST_BIN_DIR, manifest, output, output);
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RunProfileTest, AMeasuredProfileDrivesAutoInTheChief) {
  TempDir dir;
  JobParams params;
  params.model = "embedding";
  params.builder = "Auto";
  params.parameter_servers = 1;
  params.steps = 4;
  const std::string manifest = WriteManifest(dir, JobYaml(params, dir / "ckpt"));
  const std::string profile_path = dir / "profile.json";
  ASSERT_EQ(Profile(manifest, profile_path), 0) << ReadText(profile_path + ".log");
  const std::string said = ReadText(profile_path + ".log");
  EXPECT_THAT(said, HasSubstr("profile: forward "));
  // The calibration runs: AllReduce and PS on 2 local workers, their steps against the model's.
  EXPECT_THAT(said, HasSubstr("profile: calibration, AllReduce on 2 workers over loopback: "));
  EXPECT_THAT(said, HasSubstr("profile: calibration, PS on 2 workers over loopback: "));
  EXPECT_THAT(said, HasSubstr("profile: in a job, a collective costs "));

  const strategy::StepProfile profile = strategy::ReadStepProfile(profile_path);
  EXPECT_EQ(profile.source, "measured");
  EXPECT_EQ(profile.batch_per_replica, params.batch);
  EXPECT_GT(profile.forward_seconds, 0);
  EXPECT_GT(profile.backward_seconds, 0);
  EXPECT_GT(profile.update_seconds, 0);
  EXPECT_GT(profile.collective_seconds, 0);
  EXPECT_GT(profile.ps_round_seconds, 0);
  EXPECT_GT(profile.loopback_gbps, 0);
  for (const char* compressor :
       {"HorovodCompressor", "HorovodCompressorEF", "PowerSGDCompressor", "TopKCompressorEF"}) {
    EXPECT_TRUE(profile.compress_seconds_per_element.contains(compressor)) << compressor;
  }
  const std::vector<graph::Variable> variables =
      graph::GraphItem::Load(kParityDir + "embedding/model.onnx").TrainableVariables();
  strategy::CheckProfileMatches(profile, variables, params.batch, 1, profile_path);
  for (const graph::Variable& variable : variables) {
    if (!variable.sparse) continue;
    // A batch of 8 samples touches at least one row and at most every token's.
    EXPECT_GT(profile.sparse_rows.at(variable.name), 0) << variable.name;
  }

  // The same job with the profile: the chief compiles with it and says what Auto chose.
  std::string yaml = JobYaml(params, dir / "ckpt");
  const std::string builder = "    builder: Auto\n";
  yaml.replace(yaml.find(builder), builder.size(),
               builder + "    profile: {path: " + profile_path + "}\n");
  const RunOutcome outcome = RunManifest(OptionsFor(dir, WriteManifest(dir, yaml)));
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(ReadText(dir / "logs/worker-0.log"), HasSubstr("Auto chose "));
}

TEST(RunProfileTest, AProfileOfAnotherBatchIsRefusedBeforeAnythingStarts) {
  TempDir dir;
  JobParams params;
  params.builder = "Auto";
  params.batch = 8;
  const std::string manifest = WriteManifest(dir, JobYaml(params, dir / "ckpt"));
  const std::vector<graph::Variable> variables =
      graph::GraphItem::Load(kParityDir + "mlp/model.onnx").TrainableVariables();
  std::ofstream(dir / "profile.json")
      << strategy::StepProfileToJson(strategy::EstimateStepProfile(variables, 64, 1, false));
  std::string yaml = JobYaml(params, dir / "ckpt");
  const std::string builder = "    builder: Auto\n";
  yaml.replace(yaml.find(builder), builder.size(),
               builder + "    profile: {path: " + (dir / "profile.json") + "}\n");
  const cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, yaml));
  EXPECT_THAT(ErrorOf([&] { RunManifest(options); }).what(),
              HasSubstr("measured at 64 samples per replica, the job has 8"));
  EXPECT_FALSE(std::filesystem::exists(dir / "logs"));
}

}  // namespace
}  // namespace autodist::launcher
