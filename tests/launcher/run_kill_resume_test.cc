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

#include "launcher/finished_run.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

// `params` resuming from the newest checkpoint in `checkpoint_dir`, written after every step, the
// newest two kept.
std::string ResumingManifest(const JobParams& params, const std::string& checkpoint_dir) {
  std::string yaml = JobYaml(params, checkpoint_dir);
  const std::string resume = "      resume: false\n";
  yaml.replace(yaml.find(resume), resume.size(),
               "      resume: true\n      intervalSteps: 1\n      keep: 2\n");
  return yaml;
}

// PartitionedPS over two servers, SGD with momentum (state on the servers), resuming.
std::string Manifest(const std::string& checkpoint_dir, int steps) {
  JobParams params;
  params.builder = "PartitionedPS";
  params.parameter_servers = 2;
  params.steps = steps;
  return ResumingManifest(params, checkpoint_dir);
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
  bool finished = false;
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
    if (outcome.exit_code == 0) {  // finished before the kill
      finished = true;
      break;
    }
  }
  EXPECT_GE(kills, 1) << "no run was killed: the job is faster than the delays";
  if (!finished) {
    const RunOutcome last = RunManifest(options);
    ASSERT_EQ(last.exit_code, 0) << last.err;
    // Killed after the final checkpoint was written, the job is complete and is not run again.
    EXPECT_THAT(last.out, ::testing::AnyOf(::testing::HasSubstr("(resumed from step"),
                                           ::testing::HasSubstr("is already complete at step " +
                                                                std::to_string(kSteps))));
    std::cout << "the last run: " << StepsLine(dir / "logs/worker-0.log") << "\n";
  }

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

// ---- a job that already finished -------------------------------------------------------------

// The parity MLP on two workers and a parameter server, `steps` steps, resuming.
std::string ParityManifest(const std::string& checkpoint_dir, int steps) {
  JobParams params;
  params.steps = steps;
  return ResumingManifest(params, checkpoint_dir);
}

TEST(RunFinishedJobTest, IsNotRunAgainButResumesForMoreStepsAndStartsOverWithFresh) {
  TempDir dir;
  const std::string ckpt = dir / "ckpt";
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, ParityManifest(ckpt, 3)));
  const RunOutcome first = RunManifest(options);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string chief_log = ReadText(dir / "logs/worker-0.log");

  // Run again: nothing starts; the message says where the finished run is.
  const RunOutcome again = RunManifest(options);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, fmt::format("autodist run: job parity is already complete at step 3 "
                                   "(checkpoint in {}); give --fresh to train it again from "
                                   "step 0\n",
                                   ckpt));
  EXPECT_EQ(again.err, "");
  EXPECT_EQ(ReadText(dir / "logs/worker-0.log"), chief_log) << "a member ran again";

  // Two more steps asked for: the run resumes where the last one ended.
  WriteManifest(dir, ParityManifest(ckpt, 5));
  const RunOutcome more = RunManifest(options);
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_THAT(more.out, ::testing::HasSubstr("(resumed from step 3)"));
  const auto resumed = CheckpointVariables(ckpt);

  // --fresh: the two checkpoints kept (steps 4 and 5) go, and five steps train from step 0 to
  // the same bits as the run that stopped at 3 and resumed.
  options.fresh = true;
  const RunOutcome fresh = RunManifest(options);
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_THAT(fresh.out, ::testing::HasSubstr(fmt::format(
                             "autodist run: --fresh: deleted 2 checkpoints in {}\n", ckpt)));
  EXPECT_THAT(fresh.out, ::testing::Not(::testing::HasSubstr("resumed from step")));
  EXPECT_THAT(ReadText(dir / "logs/worker-0.log"), ::testing::HasSubstr("starting from step 0"));
  ExpectSameVariables(resumed, CheckpointVariables(ckpt), 0.0);
}

// FindFinishedRun on checkpoints written by hand: epochs, steps, torn files, resume off.
TEST(RunFinishedJobTest, FinishedMeansTheLastStepOrEpochOfTheNewestReadableCheckpoint) {
  TempDir dir;
  job::JobSpec job;
  job.training.epochs = 2;
  job.training.checkpoint = job::CheckpointSpec{dir / "ckpt", 0, true, 0};
  EXPECT_FALSE(cli::FindFinishedRun(job).has_value()) << "no checkpoint yet";

  checkpoint::CheckpointContents contents;
  contents.meta = {15, 1, 5, "", "model.onnx"};  // in the second epoch
  checkpoint::WriteCheckpoint(dir / "ckpt", contents, 0);
  EXPECT_FALSE(cli::FindFinishedRun(job).has_value());

  contents.meta = {20, 2, 0, "", "model.onnx"};  // the data position after two epochs
  const std::string last = checkpoint::WriteCheckpoint(dir / "ckpt", contents, 0);
  const std::optional<cli::FinishedRun> finished = cli::FindFinishedRun(job);
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->step, 20);
  EXPECT_EQ(finished->checkpoint, last);

  // A newer checkpoint torn by a crash is passed over, as the trainer passes it over.
  std::ofstream(dir / "ckpt/checkpoint-30.ckpt") << "torn";
  ASSERT_TRUE(cli::FindFinishedRun(job).has_value());
  EXPECT_EQ(cli::FindFinishedRun(job)->step, 20);

  job.training.epochs = 3;  // more epochs asked for
  EXPECT_FALSE(cli::FindFinishedRun(job).has_value());
  job.training.epochs = 0;
  job.training.steps = 20;
  EXPECT_TRUE(cli::FindFinishedRun(job).has_value());
  job.training.steps = 21;
  EXPECT_FALSE(cli::FindFinishedRun(job).has_value());
  job.training.steps = 20;
  job.training.checkpoint->resume = false;  // the run would start from step 0 anyway
  EXPECT_FALSE(cli::FindFinishedRun(job).has_value());
}

TEST(RunFinishedJobTest, RemoveCheckpointsTakesCheckpointsShardsAndTemporariesOnly) {
  TempDir dir;
  const std::string ckpt = dir / "ckpt";
  checkpoint::CheckpointContents contents;
  for (const int64_t step : {1, 2}) {
    contents.meta.step = step;
    checkpoint::WriteCheckpoint(ckpt, contents, 0);
  }
  std::ofstream(ckpt + "/checkpoint-2.ckpt.ps-0") << "shard";
  std::ofstream(ckpt + "/checkpoint-3.ckpt.tmp") << "unfinished";
  std::ofstream(ckpt + "/notes.txt") << "the user's";
  EXPECT_EQ(checkpoint::RemoveCheckpoints(ckpt), 2);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(ckpt)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(names, ::testing::ElementsAre("notes.txt"));
  EXPECT_EQ(checkpoint::RemoveCheckpoints(ckpt), 0);
  EXPECT_EQ(checkpoint::RemoveCheckpoints(dir / "no-such-dir"), 0);
}

}  // namespace
}  // namespace autodist::launcher
