// Compressed parameter-server pushes end to end: `autodist run` with PSLoadBalancing and a push
// compressor trains the parity MLP to parameters near the uncompressed run's (float16 with error
// feedback within float16 rounding, TopK within a loose bound) while the parameter servers
// receive fewer bytes.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/job/member_result.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

struct Trained {
  std::map<std::string, std::vector<float>> variables;
  int64_t bytes_pushed = 0;  // over every parameter server of the job
};

Trained Train(const std::string& options) {
  JobParams params;
  params.builder = "PSLoadBalancing";
  params.model = "mlp";
  params.parameter_servers = 2;
  params.strategy_options = options;
  TempDir dir;
  const std::string checkpoints = dir / "ckpt";
  const cli::RunOptions run = OptionsFor(dir, WriteManifest(dir, JobYaml(params, checkpoints)));
  const RunOutcome outcome = RunManifest(run);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err << outcome.out;
  EXPECT_NE(outcome.out.find("succeeded"), std::string::npos) << outcome.out;
  Trained trained;
  if (outcome.exit_code != 0) return trained;
  trained.variables = CheckpointVariables(checkpoints);
  for (const auto& entry : std::filesystem::directory_iterator(run.log_dir)) {
    if (!entry.path().string().ends_with(".result.json")) continue;
    const job::MemberResult result = job::ReadMemberResult(entry.path().string());
    if (result.parameter_server) trained.bytes_pushed += result.parameter_server->bytes_pushed;
  }
  return trained;
}

struct Case {
  const char* name;
  const char* options;  // YAML lines under spec.strategy.options
  double relative;      // parameters within this of the uncompressed run's
  double max_bytes;     // bytes pushed, as a fraction of the uncompressed run's
};

class RunCompressedPush : public ::testing::TestWithParam<Case> {};

TEST_P(RunCompressedPush, TrainsNearTheUncompressedRunWithFewerBytes) {
  const Trained uncompressed = Train("");
  const Trained compressed = Train(GetParam().options);
  ASSERT_FALSE(uncompressed.variables.empty());
  ASSERT_FALSE(compressed.variables.empty());
  ExpectSameVariables(uncompressed.variables, compressed.variables, GetParam().relative);
  ASSERT_GT(uncompressed.bytes_pushed, 0);
  EXPECT_LT(static_cast<double>(compressed.bytes_pushed),
            GetParam().max_bytes * static_cast<double>(uncompressed.bytes_pushed))
      << compressed.bytes_pushed << " vs " << uncompressed.bytes_pushed;
}

// float16: half the bytes. TopK 10%: 12 bytes for every 10 elements instead of 40.
INSTANTIATE_TEST_SUITE_P(
    Compressors, RunCompressedPush,
    ::testing::Values(
        Case{"HorovodCompressorEF", "      compressor: HorovodCompressorEF\n", 1e-3, 0.51},
        Case{"TopKCompressorEF", "      compressor: TopKCompressorEF\n      topkFraction: 0.1\n",
             0.05, 0.31}),
    [](const ::testing::TestParamInfo<Case>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace autodist::launcher
