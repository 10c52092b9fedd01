// `autodist run` with TensorBoard event files: one run directory per worker, the chief's with the
// run's scalars and its network traffic, the manifest's path or the command line's.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "runtime/observe/event_file.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

namespace fs = std::filesystem;

// (step, value) of every scalar of the one event file in `dir`, by tag.
std::map<std::string, std::vector<std::pair<int64_t, double>>> Scalars(const fs::path& dir) {
  std::map<std::string, std::vector<std::pair<int64_t, double>>> by_tag;
  const std::vector<std::string> files = observe::EventFilesIn(dir.string());
  EXPECT_EQ(files.size(), 1u) << dir;
  if (files.size() != 1) return by_tag;
  for (const observe::ScalarPoint& point : observe::ReadEventFile(files[0]).scalars) {
    by_tag[point.tag].emplace_back(point.step, point.value);
  }
  return by_tag;
}

std::vector<int64_t> Steps(const std::vector<std::pair<int64_t, double>>& points) {
  std::vector<int64_t> steps;
  for (const auto& [step, value] : points) steps.push_back(step);
  return steps;
}

TEST(RunTensorBoardTest, ManifestPathGetsARunPerWorkerWithTheChiefsScalars) {
  TempDir dir;
  JobParams params;
  params.name = "tensorboard-ps";
  params.steps = 4;
  params.eval = true;
  params.extra_training = "    tensorboard:\n      path: boards\n";  // relative to the manifest
  const cli::RunOptions options =
      OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  const RunOutcome outcome = RunManifest(options);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;

  const auto chief = Scalars(fs::path(dir / "boards") / "worker-0");
  const std::vector<int64_t> every_step = {1, 2, 3, 4};  // logIntervalSteps: 1
  for (const char* tag : {"train/loss", "train/learning_rate", "perf/samples_per_second",
                          "perf/step_seconds", "wire/parameter_server_bytes"}) {
    ASSERT_EQ(chief.count(tag), 1u) << tag;
    EXPECT_EQ(Steps(chief.at(tag)), every_step) << tag;
  }
  // Every step pushes gradients and pulls values: the servers' byte count grows each step.
  const auto& bytes = chief.at("wire/parameter_server_bytes");
  for (size_t i = 1; i < bytes.size(); ++i) EXPECT_GT(bytes[i].second, bytes[i - 1].second);
  // Uncompressed pushes: decoded as sent.
  ASSERT_EQ(chief.count("wire/parameter_server_compression_ratio"), 1u);
  for (const auto& [step, ratio] : chief.at("wire/parameter_server_compression_ratio")) {
    EXPECT_EQ(ratio, 1.0) << step;
  }
  EXPECT_EQ(chief.count("wire/all_reduce_bytes"), 0u);  // a PS strategy all-reduces nothing
  ASSERT_EQ(chief.count("eval/loss"), 1u);
  EXPECT_EQ(Steps(chief.at("eval/loss")), std::vector<int64_t>{4});

  // The other worker records its own pace only.
  const auto other = Scalars(fs::path(dir / "boards") / "worker-1");
  EXPECT_EQ(Steps(other.at("perf/step_seconds")), every_step);
  EXPECT_EQ(other.count("train/loss"), 0u);
  EXPECT_EQ(other.count("eval/loss"), 0u);
  EXPECT_FALSE(fs::exists(fs::path(dir / "boards") / "ps-0"));  // servers train nothing

  // The run's report reads the same files: a loss point per logged step.
  const std::string report = ReadText(dir / "logs/report.html");
  EXPECT_NE(outcome.out.find("report: " + dir / "logs/report.html"), std::string::npos);
  const size_t points = CountOccurrences(report, "data-series=\"train loss\" cx");
  EXPECT_EQ(points, 4u);
  EXPECT_NE(report.find("<p class=\"outcome ok\">succeeded"), std::string::npos);
  EXPECT_NE(report.find("builder: PS\n"), std::string::npos);  // the chief's strategy summary
}

TEST(RunTensorBoardTest, CommandLineDirectoryWinsAndAllReduceTrafficIsRecorded) {
  TempDir dir;
  JobParams params;
  params.name = "tensorboard-allreduce";
  params.builder = "AllReduce";
  params.parameter_servers = 0;
  params.steps = 3;
  params.extra_training = "    tensorboard:\n      path: from-manifest\n";
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.tensorboard = dir / "from-cli";
  const RunOutcome outcome = RunManifest(options);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_FALSE(fs::exists(dir / "from-manifest"));

  const auto chief = Scalars(fs::path(dir / "from-cli") / "worker-0");
  ASSERT_EQ(chief.count("wire/all_reduce_bytes"), 1u);
  const auto& bytes = chief.at("wire/all_reduce_bytes");
  ASSERT_EQ(bytes.size(), 3u);
  EXPECT_GT(bytes[0].second, 0);
  EXPECT_GT(bytes[2].second, bytes[0].second);
  // Uncompressed: as many bytes contributed as float32 bytes reduced.
  EXPECT_DOUBLE_EQ(chief.at("wire/compression_ratio").back().second, 1.0);
  EXPECT_EQ(chief.count("wire/parameter_server_bytes"), 0u);
  EXPECT_EQ(Scalars(fs::path(dir / "from-cli") / "worker-1").count("perf/step_seconds"), 1u);
}

}  // namespace
}  // namespace autodist::launcher
