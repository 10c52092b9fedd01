// `autodist run --network`: every member in its own network namespace on shaped links. The
// training is bit-identical to the same job on loopback (the wire changes time, never values),
// a bad rate is refused before anything starts, and a launcher killed mid-run leaves no
// namespace, interface or qdisc behind. Skipped, visibly, where namespaces cannot be made.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <regex>
#include <thread>

#include "tests/launcher/run_job_test_util.h"
#include "tests/netemu/netemu_test_util.h"

extern char** environ;  // NOLINT: POSIX declares it nowhere in a header

namespace autodist::launcher {
namespace {

using ::testing::HasSubstr;

class RunNetworkTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RunNetworkTest, TrainsBitIdenticallyToLoopback) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  JobParams params;
  params.builder = GetParam();
  params.parameter_servers = GetParam() == "AllReduce" ? 0 : 1;
  params.steps = 6;
  TempDir loopback_dir;
  const RunOutcome loopback = RunManifest(OptionsFor(
      loopback_dir, WriteManifest(loopback_dir, JobYaml(params, loopback_dir / "ckpt"))));
  ASSERT_EQ(loopback.exit_code, 0) << loopback.err;

  TempDir dir;
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.network = "1gbit";
  const RunOutcome emulated = RunManifest(options);
  ASSERT_EQ(emulated.exit_code, 0) << emulated.err;
  const int hosts = 2 + params.parameter_servers;
  EXPECT_THAT(emulated.out, HasSubstr(fmt::format("emulated network: {} hosts, each in its own "
                                                  "network namespace",
                                                  hosts)));
  EXPECT_THAT(emulated.out, HasSubstr("links shaped to 1 Gbit/s each way"));
  // The members really were elsewhere: the chief served the coordinator on its own address.
  EXPECT_THAT(ReadText(dir / "logs/worker-1.log"), HasSubstr("registered as worker"));
  ExpectSameVariables(CheckpointVariables(loopback_dir / "ckpt"), CheckpointVariables(dir / "ckpt"),
                      0.0);
}

INSTANTIATE_TEST_SUITE_P(Builders, RunNetworkTest, ::testing::Values("PS", "AllReduce"));

// Auto plans for the emulated links when the manifest states none.
TEST(RunNetworkAutoTest, AutoPlansForTheEmulatedLinks) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  JobParams params;
  params.builder = "Auto";
  params.steps = 2;
  TempDir dir;
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.network = "100mbit";
  const RunOutcome outcome = RunManifest(options);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.out, HasSubstr("Auto plans for links of 100 Mbit/s (--network; the "
                                     "manifest sets no spec.resources.networkBandwidthGbps)"));
  EXPECT_THAT(ReadText(dir / "logs/worker-0.log"), HasSubstr("Auto chose "));
}

TEST(RunNetworkInputTest, ABadRateOrALatencyWithoutANetworkIsRefusedBeforeAnythingStarts) {
  TempDir dir;
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(JobParams{}, dir / "ckpt")));
  options.network = "fast";
  const Error bad_rate = ErrorOf([&] { RunManifest(options); });
  EXPECT_EQ(bad_rate.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(bad_rate.what(), HasSubstr("--network: 'fast' is not a link rate"));
  options.network.clear();
  options.network_latency_ms = 5;
  EXPECT_THAT(ErrorOf([&] { RunManifest(options); }).what(),
              HasSubstr("--network-latency-ms needs --network"));
  EXPECT_FALSE(std::filesystem::exists(dir / "logs")) << "nothing may start on bad input";
}

TEST(RunNetworkKillTest, ALauncherKilledMidRunLeavesNoNetworkBehind) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  TempDir dir;
  JobParams params;
  params.steps = 100000;
  const std::string manifest = WriteManifest(dir, JobYaml(params, dir / "ckpt"));
  const std::string out = dir / "out.txt";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> argv = {std::string(AUTODIST_BIN_DIR) + "/autodist",
                                   "run",
                                   manifest,
                                   "--network",
                                   "1gbit",
                                   "--threads",
                                   "1",
                                   "--log-dir",
                                   dir / "logs"};
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  pid_t launcher = 0;
  ASSERT_EQ(posix_spawn(&launcher, pointers[0], &actions, nullptr, pointers.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // Training has begun once the chief logs a step.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (ReadText(dir / "logs/worker-0.log").find("] step ") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_THAT(ReadText(dir / "logs/worker-0.log"), HasSubstr("] step "));
  std::smatch subnet;
  const std::string said = ReadText(out);
  ASSERT_TRUE(std::regex_search(said, subnet, std::regex(R"(198\.18\.(\d+)\.0/24)"))) << said;
  const std::string device = "adn" + subnet[1].str();
  const std::string ours = netemu::NetNamespaceOf(::getpid());
  std::set<std::string> namespaces;
  for (const pid_t child : netemu::ChildrenOf(launcher)) {
    if (const std::string ns = netemu::NetNamespaceOf(child); !ns.empty() && ns != ours) {
      namespaces.insert(ns);
    }
  }
  EXPECT_EQ(namespaces.size(), 4U) << "the switch and three members";
  const std::vector<pid_t> processes = ProcessesMentioning(manifest);
  // The launcher, its four namespace holders (forks of it, the same command line) and three
  // members.
  EXPECT_EQ(processes.size(), 8U);

  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  ::waitpid(launcher, nullptr, 0);
  for (const pid_t process : processes) EXPECT_TRUE(WaitUntilGone(process)) << process;
  EXPECT_THAT(netemu::LeftBehind(namespaces, device), ::testing::IsEmpty());
}

}  // namespace
}  // namespace autodist::launcher
