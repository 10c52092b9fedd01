// What the GPU job tests share: a job run through `autodist run` on the CPU or with
// gpusPerWorker: 1, the chief's per-step losses, the checkpointed variables and every member's
// log. Needs the autodist-runtime binary: $AUTODIST_RUNTIME, else the build's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "runtime/observe/event_file.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher::testing {

struct GpuJobCase {
  const char* builder;
  const char* model;
  int parameter_servers;
  int workers = 2;
  const char* strategy_options = "";  // YAML lines under spec.strategy.options, indented
};

// The chief's train/loss scalars, one per step (logIntervalSteps: 1).
inline std::vector<double> ChiefLosses(const std::filesystem::path& boards) {
  std::vector<double> losses;
  const std::vector<std::string> files = observe::EventFilesIn((boards / "worker-0").string());
  EXPECT_EQ(files.size(), 1U) << boards;
  if (files.size() != 1) return losses;
  for (const observe::ScalarPoint& point : observe::ReadEventFile(files[0]).scalars) {
    if (point.tag == "train/loss") losses.push_back(point.value);
  }
  return losses;
}

struct JobRun {
  std::vector<double> losses;
  std::map<std::string, std::vector<float>> variables;
  std::string logs;  // every member's log, one after another
};

// Runs `job` for `steps` steps on the CPU, or with `gpus` on one GPU per worker.
inline JobRun RunJobOn(const GpuJobCase& job, bool gpus, const TempDir& dir, int steps = 50) {
  const std::string name = gpus ? "gpu" : "cpu";
  JobParams params;
  params.name = "gpu-workers-" + name;
  params.builder = job.builder;
  params.model = job.model;
  params.parameter_servers = job.parameter_servers;
  params.workers = job.workers;
  params.strategy_options = job.strategy_options;
  params.steps = steps;
  params.extra_training =
      fmt::format("    tensorboard:\n      path: {}\n", dir / (name + "-boards"));
  if (gpus) params.extra_resources = "    gpusPerWorker: 1\n";
  const std::string checkpoints = dir / (name + "-ckpt");
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, checkpoints)));
  options.log_dir = dir / (name + "-logs");
  if (const char* runtime = std::getenv("AUTODIST_RUNTIME")) options.runtime = runtime;
  const RunOutcome outcome = RunManifest(options);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err << outcome.out;
  JobRun run;
  for (const auto& entry : std::filesystem::directory_iterator(options.log_dir)) {
    if (entry.path().extension() == ".log") run.logs += ReadText(entry.path().string());
  }
  if (outcome.exit_code != 0) return run;
  run.losses = ChiefLosses(dir / (name + "-boards"));
  run.variables = CheckpointVariables(checkpoints);
  return run;
}

// The GPU run's losses and variables against the CPU run's (fp32: `tolerance` relative).
inline void ExpectRunsMatch(const JobRun& cpu, const JobRun& gpu, size_t steps, double tolerance) {
  ASSERT_EQ(cpu.losses.size(), steps);
  ASSERT_EQ(gpu.losses.size(), steps);
  for (size_t step = 0; step < steps; ++step) {
    EXPECT_NEAR(gpu.losses[step], cpu.losses[step],
                tolerance * std::max(1.0, std::abs(cpu.losses[step])))
        << "step " << step + 1;
  }
  ExpectSameVariables(cpu.variables, gpu.variables, tolerance);
}

}  // namespace autodist::launcher::testing
