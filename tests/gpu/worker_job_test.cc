// GPU workers in a job, on one GPU: `autodist run` with two workers of gpusPerWorker: 1 shares
// the machine's one GPU between them; each stages its gradients and variables through host
// memory to Gloo or the parameter servers (exec/host_staged_synchronizer.h). Over 50 steps the
// chief's per-step losses and the trained variables match the same job's run on the CPU (fp32:
// 1e-4 relative), for an all-reduce and a parameter-server strategy. Needs a GPU (SKIPPED
// without one) and the autodist-runtime binary: $AUTODIST_RUNTIME, else the build's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "runtime/observe/event_file.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

namespace fs = std::filesystem;

struct Case {
  const char* builder;
  const char* model;
  int parameter_servers;
};

// The chief's train/loss scalars, one per step (logIntervalSteps: 1).
std::vector<double> ChiefLosses(const fs::path& boards) {
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
};

JobRun RunJobOn(const Case& job, bool gpus, const TempDir& dir) {
  const std::string name = gpus ? "gpu" : "cpu";
  JobParams params;
  params.name = "gpu-workers-" + name;
  params.builder = job.builder;
  params.model = job.model;
  params.parameter_servers = job.parameter_servers;
  params.steps = 50;
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
  if (outcome.exit_code != 0) return run;
  run.losses = ChiefLosses(dir / (name + "-boards"));
  run.variables = CheckpointVariables(checkpoints);
  return run;
}

class GpuWorkerJob : public ::testing::TestWithParam<Case> {};

TEST_P(GpuWorkerJob, TwoWorkersSharingTheGpuMatchTheCpuRunOver50Steps) {
  AUTODIST_SKIP_WITHOUT_GPU();
  TempDir dir;
  const JobRun cpu = RunJobOn(GetParam(), false, dir);
  const JobRun gpu = RunJobOn(GetParam(), true, dir);
  ASSERT_EQ(cpu.losses.size(), 50U);
  ASSERT_EQ(gpu.losses.size(), 50U);
  for (size_t step = 0; step < cpu.losses.size(); ++step) {
    EXPECT_NEAR(gpu.losses[step], cpu.losses[step],
                1e-4 * std::max(1.0, std::abs(cpu.losses[step])))
        << "step " << step + 1;
  }
  ExpectSameVariables(cpu.variables, gpu.variables, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Builders, GpuWorkerJob,
                         ::testing::Values(Case{"AllReduce", "mlp", 0}, Case{"PS", "mlp", 1},
                                           Case{"PS", "embedding", 1}),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return std::string(param.param.builder) + "_" + param.param.model;
                         });

}  // namespace
}  // namespace autodist::launcher
