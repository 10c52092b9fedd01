// A distributed job killed with SIGKILL at random moments (every member at once, as a node loss
// would) resumes each time from the newest whole checkpoint, and its end is bit-identical to a
// run never interrupted: checkpoints written by the parameter servers in parallel and by the
// chief, torn ones passed over, shard files cleaned up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <iostream>
#include <random>
#include <thread>

#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

// PartitionedPS over two servers, SGD with momentum (state on the servers), a checkpoint after
// every step and the newest two kept, resuming from the newest.
std::string Manifest(const std::string& checkpoint_dir, int steps) {
  JobParams params;
  params.builder = "PartitionedPS";
  params.parameter_servers = 2;
  params.steps = steps;
  std::string yaml = JobYaml(params, checkpoint_dir);
  const std::string resume = "      resume: false\n";
  yaml.replace(yaml.find(resume), resume.size(),
               "      resume: true\n      intervalSteps: 1\n      keep: 2\n");
  return yaml;
}

// Where the chief's last run resumed and the last step it logged (its log, worker-0.log).
std::string StepsLine(const std::string& log) {
  const std::string text = ReadText(log);
  if (text.find("resumed from ") == std::string::npos) return "started fresh";
  const size_t resumed = text.find(" at step ", text.find("resumed from "));
  std::string line =
      "resumed at step " + text.substr(resumed + 9, text.find('\n', resumed) - resumed - 9);
  const size_t step = text.rfind("] step ");
  if (step != std::string::npos) {
    line += ", reached " + text.substr(step + 2, text.find(' ', step + 7) - step - 2);
  }
  return line;
}

TEST(RunKillResumeTest, KilledAtRandomMomentsEndsBitIdenticalToAnUninterruptedRun) {
  constexpr int kSteps = 200;
  TempDir straight_dir;
  const RunOutcome straight = RunManifest(OptionsFor(
      straight_dir, WriteManifest(straight_dir, Manifest(straight_dir / "ckpt", kSteps))));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;

  TempDir dir;
  const std::string manifest = WriteManifest(dir, Manifest(dir / "ckpt", kSteps));
  const cli::RunOptions options = OptionsFor(dir, manifest);
  std::mt19937 rng(20261125);
  std::uniform_int_distribution<int> delay_ms(300, 1500);
  int kills = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto run = std::async(std::launch::async, [&] { return RunManifest(options); });
    const int delay = delay_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    const std::vector<pid_t> members = ProcessesMentioning(manifest);
    for (const pid_t pid : members) kill(pid, SIGKILL);
    ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    const RunOutcome outcome = run.get();
    if (!members.empty() && outcome.exit_code != 0) ++kills;
    std::cout << "attempt " << attempt << ": killed after " << delay << " ms, "
              << StepsLine(dir / "logs/worker-0.log") << "\n";
    if (outcome.exit_code == 0) break;  // finished before the kill
  }
  EXPECT_GE(kills, 1) << "no run was killed: the job is faster than the delays";
  const RunOutcome last = RunManifest(options);
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_THAT(last.out, ::testing::HasSubstr("(resumed from step"));
  std::cout << "the last run: " << StepsLine(dir / "logs/worker-0.log") << "\n";

  // The newest two checkpoints and their servers' shard files, nothing else.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "ckpt")) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names,
              ::testing::ElementsAre("checkpoint-199.ckpt", "checkpoint-199.ckpt.ps-0",
                                     "checkpoint-199.ckpt.ps-1", "checkpoint-200.ckpt",
                                     "checkpoint-200.ckpt.ps-0", "checkpoint-200.ckpt.ps-1"));
  ExpectSameVariables(CheckpointVariables(straight_dir / "ckpt"), CheckpointVariables(dir / "ckpt"),
                      0.0);
}

}  // namespace
}  // namespace autodist::launcher
