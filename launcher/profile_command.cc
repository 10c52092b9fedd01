#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>

#include "launcher/child_process.h"
#include "launcher/commands.h"
#include "launcher/private_directory.h"
#include "launcher/run_command.h"
#include "launcher/runtime_executable.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/graph/graph_item.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/job_views.h"
#include "runtime/job/job_writer.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/cost_model.h"
#include "runtime/strategy/step_profile.h"

namespace autodist::cli {
namespace {

namespace fs = std::filesystem;

// Steps of a calibration run; the chief's second progress window (steps 21-40) is measured.
constexpr int64_t kCalibrationSteps = 40;

// `job` as the calibration runs train it: two workers hosting the parameter servers, a few
// steps, nothing written but the logs, built with `builder` and its defaults.
job::JobSpec CalibrationJob(const job::JobSpec& job, const std::string& builder) {
  job::JobSpec pair = job;
  pair.metadata.name = "profile-calibration";
  pair.training.epochs = 0;
  pair.training.steps = kCalibrationSteps;
  pair.training.log_interval_steps = kCalibrationSteps / 2;
  pair.training.checkpoint.reset();
  pair.training.export_path.clear();
  pair.training.tensorboard_path.clear();
  pair.training.timeline_path.clear();
  pair.data.eval.clear();
  pair.strategy = job::StrategySpec{};
  pair.strategy.builder = builder;
  pair.resources.workers = 2;
  pair.resources.parameter_servers = 0;
  return pair;
}

// Seconds per step of `pair`, trained on this machine's loopback: the chief's last progress
// window, past start-up.
double MeasuredStepSeconds(const job::JobSpec& pair, const ProfileCommandOptions& options) {
  const launcher::PrivateDirectory scratch("autodist-profile", "a calibration run");
  const std::string manifest = (fs::path(scratch.path()) / "job.yaml").string();
  WriteFileBytes(manifest, job::JobToYaml(pair));
  RunOptions run;
  run.manifest = manifest;
  run.log_dir = (fs::path(scratch.path()) / "logs").string();
  run.runtime = options.runtime;
  run.threads = options.threads;
  run.tensorboard = (fs::path(scratch.path()) / "tensorboard").string();
  run.network = options.network;
  std::ostringstream out;
  std::ostringstream err;
  const int code = RunJob(run, out, err);
  AD_CHECK(code == 0, kUnavailable, "autodist profile: the calibration run ({}) failed:\n{}{}",
           pair.strategy.builder, out.str(), err.str());
  const std::string log =
      ReadFileBytes((fs::path(scratch.path()) / "logs/worker-0.log").string(), "log");
  const std::regex progress(R"(samples/s (\d+))");
  double rate = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), progress);
       it != std::sregex_iterator(); ++it) {
    rate = std::stod((*it)[1].str());
  }
  AD_CHECK(rate > 0, kInternal, "autodist profile: the calibration run logged no progress");
  const int per_worker = pair.resources.replicas_per_worker;
  return static_cast<double>(pair.data.batch_size_per_replica * per_worker) / rate;
}

// The fixed costs of a collective and of a parameter-server round as a job on this machine
// meets them: each calibration run's measured step, less the cost model's prediction of it on
// loopback with the costs measured in isolation, spread over its collectives (or its round).
// What a job adds to a collective alone (its other threads, the other worker's, the hand-offs)
// shows only in a job.
void Calibrate(const job::JobSpec& job, const ProfileCommandOptions& options,
               strategy::StepProfile& profile, std::ostream& out) {
  const std::vector<graph::Variable> variables =
      graph::GraphItem::Load(job.model.path).TrainableVariables();
  strategy::NetworkAssumptions loopback;
  loopback.default_gbps = profile.loopback_gbps > 0 ? profile.loopback_gbps : 10;
  loopback.latency_seconds = 0;
  const auto residual = [&](const std::string& builder) {
    const job::JobSpec pair = CalibrationJob(job, builder);
    const strategy::ResourceSpec resources =
        strategy::ResourceSpec::FromReplicaCounts(job::ToReplicaCounts(pair));
    strategy::CompileRequest request;
    request.builder = builder;
    const strategy::CompileResult compiled = strategy::Compile(variables, resources, request);
    const strategy::StepPrediction predicted =
        strategy::PredictStep(compiled.strategy, variables, resources, profile, loopback);
    const double measured = MeasuredStepSeconds(pair, options);
    out << fmt::format(
               "profile: calibration, {} on 2 workers over {}: {:.3f} ms per step "
               "measured, {:.3f} ms predicted from the costs alone",
               builder,
               options.network.empty() ? std::string("loopback")
                                       : "an emulated network (" + options.network + ")",
               measured * 1e3, predicted.total_seconds * 1e3)
        << std::endl;
    return std::make_pair(measured - predicted.total_seconds, predicted);
  };
  const auto [all_reduce_extra, all_reduce] = residual("AllReduce");
  if (all_reduce.collectives > 0) {
    profile.collective_seconds =
        std::max(profile.collective_seconds,
                 profile.collective_seconds + all_reduce_extra / all_reduce.collectives);
  }
  const auto [ps_extra, ps] = residual("PS");
  if (ps.ps_rounds > 0) {
    profile.ps_round_seconds =
        std::max(profile.ps_round_seconds, profile.ps_round_seconds + ps_extra);
  }
}

}  // namespace

int RunProfile(const ProfileCommandOptions& options) {
  // Read here first, so that a bad manifest is the command's error, not the child's.
  const job::JobSpec job = job::LoadJobFile(options.manifest);
  job::RequireLocalModel(job);
  AD_CHECK(options.steps >= 1, kInvalidArgument, "--steps {}: expected at least 1", options.steps);
  AD_CHECK(!options.output.empty(), kInvalidArgument, "-o: the profile needs a file name");
  const std::string output = fs::absolute(options.output).string();
  launcher::ProcessSpec spec;
  spec.name = "profile";
  spec.argv = {launcher::RuntimeExecutable(options.runtime),
               "--profile-job",
               fs::absolute(options.manifest).string(),
               "--profile-output",
               output,
               "--profile-steps",
               std::to_string(options.steps),
               "--threads",
               std::to_string(options.threads)};
  spec.share_output = true;
  const launcher::SpawnedChild child = launcher::SpawnChild(spec);
  int status = 0;
  launcher::WaitForPid(child.pid, &status);
  const int code = launcher::ShellExitCode(status);
  // GPU workers cannot be run here: their profile keeps the costs measured alone.
  if (code != 0 || job.resources.gpus_per_worker > 0 || !options.calibrate) return code;

  strategy::StepProfile profile = strategy::ReadStepProfile(output);
  Calibrate(job, options, profile, std::cout);
  WriteFileBytes(output, strategy::StepProfileToJson(profile));
  std::cout << fmt::format(
                   "profile: in a job, a collective costs {:.3f} ms and a parameter-server round "
                   "{:.3f} ms beyond their bytes; wrote {}",
                   profile.collective_seconds * 1e3, profile.ps_round_seconds * 1e3, output)
            << std::endl;
  return 0;
}

}  // namespace autodist::cli
