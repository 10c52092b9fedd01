// What `autodist run` puts in its members' environment: the manifest's NCCL settings
// (spec.resources.nccl), as the operator does in pods, over the caller's own; and the GPUs each
// GPU worker may see.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <map>
#include <string>

#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

using ::testing::HasSubstr;

// The environment of process `pid`, by name.
std::map<std::string, std::string> EnvironmentOf(pid_t pid) {
  const std::string text = ReadText("/proc/" + std::to_string(pid) + "/environ");
  std::map<std::string, std::string> environment;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\0', begin);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(begin, end - begin);
    if (const size_t equals = entry.find('='); equals != std::string::npos) {
      environment[entry.substr(0, equals)] = entry.substr(equals + 1);
    }
    begin = end + 1;
  }
  return environment;
}

TEST(RunEnvironmentTest, MembersGetTheManifestsNcclSettingsOverTheCallers) {
  // Set in the caller and not in the manifest: inherited as it is. Set in both: the manifest's.
  ASSERT_EQ(setenv("NCCL_SOCKET_IFNAME", "from-the-caller", 1), 0);
  ASSERT_EQ(setenv("NCCL_DEBUG", "WARN", 1), 0);
  TempDir dir;
  JobParams params;
  params.steps = 1000000;
  params.run_policy = "    activeDeadlineSeconds: 3\n";  // ends the run once looked at
  params.extra_resources = "    nccl: {debug: INFO, ibDisable: true}\n";
  const std::string manifest = WriteManifest(dir, JobYaml(params, dir / "ckpt"));
  const cli::RunOptions options = OptionsFor(dir, manifest);
  auto run = std::async(std::launch::async, [&] { return RunManifest(options); });
  for (const char* node : {"worker-0", "ps-0"}) {
    const pid_t member = WaitForMember(manifest, node);
    ASSERT_NE(member, 0) << node << " never started";
    const std::map<std::string, std::string> environment = EnvironmentOf(member);
    EXPECT_EQ(environment.at("NCCL_DEBUG"), "INFO") << node;
    EXPECT_EQ(environment.at("NCCL_IB_DISABLE"), "1") << node;
    EXPECT_EQ(environment.at("NCCL_SOCKET_IFNAME"), "from-the-caller") << node;
  }
  const RunOutcome outcome = run.get();
  EXPECT_EQ(outcome.exit_code, 1) << outcome.err;  // the deadline
  unsetenv("NCCL_SOCKET_IFNAME");
  unsetenv("NCCL_DEBUG");
}

// GPU workers on one machine are dealt the caller's GPUs in turn through CUDA_VISIBLE_DEVICES,
// as a cluster's device plugin gives each pod its own; without those GPUs here, each worker's
// own check then fails the job, naming the field.
TEST(RunEnvironmentTest, GpuWorkersAreDealtTheVisibleGpusInTurn) {
  ASSERT_EQ(setenv("CUDA_VISIBLE_DEVICES", "4,6", 1), 0);
  TempDir dir;
  JobParams params;
  params.builder = "AllReduce";
  params.parameter_servers = 0;
  params.extra_resources = "    gpusPerWorker: 1\n";
  const RunOutcome outcome =
      RunManifest(OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt"))));
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_THAT(outcome.out, HasSubstr("gpus (CUDA_VISIBLE_DEVICES): worker-0 4, worker-1 6"));
  EXPECT_NE(outcome.exit_code, 0);
  EXPECT_THAT(outcome.err, HasSubstr("resources.gpusPerWorker: "));
}

}  // namespace
}  // namespace autodist::launcher
