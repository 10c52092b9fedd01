#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>

#include "launcher/child_process.h"
#include "launcher/commands.h"
#include "launcher/netemu/link_rate.h"
#include "launcher/private_directory.h"
#include "launcher/run_command.h"
#include "launcher/runtime_executable.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/common/median.h"
#include "runtime/common/posix_process.h"
#include "runtime/graph/graph_item.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/job_views.h"
#include "runtime/job/job_writer.h"
#include "runtime/strategy/calibration.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/cost_model.h"
#include "runtime/strategy/step_profile.h"

namespace autodist::cli {
namespace {

namespace fs = std::filesystem;

// Steps of a calibration run: enough for about kCalibrationSeconds as predicted, within these
// bounds; the chief's second progress window (the second half) is measured. Each run is repeated
// kCalibrationRepeats times, the builders in turn, and the median step kept: a single
// short run is too noisy to tell a collective's cost from its efficiency. The most steps allow
// the full seconds down to steps of under a millisecond: at 400 steps, the embedding's 0.3 ms
// steps (with changed-row pulls and all-gathers on our links) were measured over 60 ms windows,
// and one calibration made a collective cost 142 us where the next rate's made it 26.
constexpr int64_t kMinimumCalibrationSteps = 40;
constexpr int64_t kMaximumCalibrationSteps = 8000;
constexpr double kCalibrationSeconds = 3;
constexpr int kCalibrationRepeats = 3;
// Links that take no time: a prediction less the same on these is its wire.
constexpr double kUnlimitedGbps = 1e12;

// `job` as the calibration runs train it: two workers hosting the parameter servers, nothing
// written but the logs, built with `builder` and `options`; its steps are set once predicted.
job::JobSpec CalibrationJob(const job::JobSpec& job, const std::string& builder,
                            const strategy::BuilderOptions& options) {
  job::JobSpec pair = job;
  pair.metadata.name = "profile-calibration";
  pair.training.epochs = 0;
  pair.training.checkpoint.reset();
  pair.training.export_path.clear();
  pair.training.tensorboard_path.clear();
  pair.training.timeline_path.clear();
  pair.data.eval.clear();
  pair.strategy = job::StrategySpec{};
  pair.strategy.builder = builder;
  pair.strategy.options = options;
  pair.resources.workers = 2;
  pair.resources.parameter_servers = 0;
  pair.resources.network_bandwidth_gbps.reset();  // the calibration network's links, not the job's
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

// The fixed costs of a collective, of a parameter-server round and of a job's step as a job on
// this machine meets them (calibration.h). What a job adds to a collective alone (its other
// threads, the other worker's, the hand-offs) shows only in a job: four or five runs of it,
// AllReduce fused as by default, with about three groups and with one collective per variable,
// PS and PartitionedPS, are each compared with the model's prediction of that same run on the
// calibration network's links.
void Calibrate(const job::JobSpec& job, const ProfileCommandOptions& options,
               strategy::StepProfile& profile, std::ostream& out) {
  const std::vector<graph::Variable> variables =
      graph::GraphItem::Load(job.model.path).TrainableVariables();
  // The calibration network's links: a shaped rate is known; loopback or an unshaped network is
  // taken at the loopback's rate (what the veth pairs reach beyond it lands in the costs).
  const std::optional<int64_t> shaped =
      options.network.empty() ? std::nullopt : netemu::ParseLinkRate(options.network, "--network");
  strategy::NetworkAssumptions links;
  links.default_gbps = shaped                      ? static_cast<double>(*shaped) / 1e9
                       : profile.loopback_gbps > 0 ? profile.loopback_gbps
                                                   : 10;
  links.latency_seconds = 0;
  // The parameter-server run pulls what the job's optimizer makes it pull: rows or tables.
  const strategy::OptimizerTraits optimizer = job::OptimizerTraitsOf(job);
  // The runs, compiled once; their steps from the prediction with the costs alone.
  struct Run {
    std::string label;
    job::JobSpec pair;
    strategy::ResourceSpec resources;
    autodist::proto::Strategy strategy;
    std::vector<double> measured;
  };
  // A run as `with` predicts it (the profile as calibrated so far, by default).
  const auto predict = [&](const Run& run, const strategy::StepProfile* with = nullptr) {
    const strategy::StepProfile& costs = with != nullptr ? *with : profile;
    strategy::CalibrationRun result;
    result.predicted =
        strategy::PredictStep(run.strategy, variables, run.resources, costs, links, optimizer);
    strategy::NetworkAssumptions unlimited = links;
    unlimited.default_gbps = kUnlimitedGbps;
    result.wire_seconds =
        result.predicted.total_seconds -
        strategy::PredictStep(run.strategy, variables, run.resources, costs, unlimited, optimizer)
            .total_seconds;
    result.measured_seconds = run.measured.empty() ? 0 : Median(run.measured);
    return result;
  };
  struct Plan {
    const char* label;
    const char* builder;
    strategy::BuilderOptions options;
  };
  // Between fused and one collective per variable, about three groups: the overlap run.
  const int64_t dense = std::count_if(variables.begin(), variables.end(),
                                      [](const graph::Variable& v) { return !v.sparse; });
  const std::string middle_chunk = std::to_string(std::max<int64_t>(2, (dense + 2) / 3));
  const std::string middle_label = "AllReduce chunk_size=" + middle_chunk;
  std::vector<Run> runs;
  for (const auto& [label, builder, builder_options] :
       std::vector<Plan>{{"AllReduce", "AllReduce", {}},
                         {middle_label.c_str(), "AllReduce", {{"chunk_size", middle_chunk}}},
                         {"AllReduce chunk_size=1", "AllReduce", {{"chunk_size", "1"}}},
                         {"PS", "PS", {}},
                         {"PartitionedPS", "PartitionedPS", {}}}) {
    Run run;
    run.label = label;
    run.pair = CalibrationJob(job, builder, builder_options);
    run.resources = strategy::ResourceSpec::FromReplicaCounts(job::ToReplicaCounts(run.pair));
    strategy::CompileRequest request;
    request.builder = builder;
    request.options = builder_options;
    run.strategy = strategy::Compile(variables, run.resources, request).strategy;
    const double predicted = predict(run).predicted.total_seconds;
    const auto steps = static_cast<int64_t>(kCalibrationSeconds / std::max(predicted, 1e-6));
    run.pair.training.steps =
        std::clamp(steps, kMinimumCalibrationSteps, kMaximumCalibrationSteps) / 2 * 2;
    run.pair.training.log_interval_steps = run.pair.training.steps / 2;
    runs.push_back(std::move(run));
  }
  // The overlap run only where its collectives lie strictly between the other two runs'.
  const auto collectives = [&](const Run& run) { return predict(run).predicted.collectives; };
  const bool overlap_run =
      collectives(runs[1]) > collectives(runs[0]) && collectives(runs[1]) < collectives(runs[2]);
  if (!overlap_run) runs.erase(runs.begin() + 1);
  for (int repeat = 0; repeat < kCalibrationRepeats; ++repeat) {
    for (Run& run : runs) run.measured.push_back(MeasuredStepSeconds(run.pair, options));
  }
  const std::string network = options.network.empty()
                                  ? std::string("loopback")
                                  : "an emulated network (" + options.network + ")";
  const auto report = [&](const Run& run, const strategy::CalibrationRun& result) {
    out << fmt::format(
               "profile: calibration, {} on 2 workers over {}: {:.3f} ms per step measured "
               "(median of {}, {} steps each), {:.3f} ms predicted from the costs so far "
               "({} collectives)",
               run.label, network, result.measured_seconds * 1e3, run.measured.size(),
               run.pair.training.steps, result.predicted.total_seconds * 1e3,
               result.predicted.collectives)
        << std::endl;
  };
  const Run& fused_run = runs.front();
  const Run& apart_run = runs[runs.size() - 3];
  const Run& ps_run = runs[runs.size() - 2];
  const Run& partitioned_run = runs.back();
  report(fused_run, predict(fused_run));
  if (overlap_run) {
    report(runs[1], predict(runs[1]));
    strategy::CalibrateOverlap(
        [&](const strategy::StepProfile& trial) {
          return strategy::OverlapRuns{predict(fused_run, &trial), predict(runs[1], &trial),
                                       predict(apart_run, &trial)};
        },
        profile);
  }
  const strategy::CalibrationRun fused = predict(fused_run);
  const strategy::CalibrationRun apart = predict(apart_run);
  report(apart_run, apart);
  strategy::CalibrateCollectives(fused, apart, profile);
  // The PS runs pay none of all-reduce's overhead: their residuals are their serving's.
  const strategy::CalibrationRun ps = predict(ps_run);
  const strategy::CalibrationRun partitioned = predict(partitioned_run);
  report(ps_run, ps);
  report(partitioned_run, partitioned);
  strategy::CalibrateParameterServers(ps, partitioned, profile);
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
  WaitForPid(child.pid, &status);
  const int code = launcher::ShellExitCode(status);
  // GPU workers cannot be run here: their profile keeps the costs measured alone.
  if (code != 0 || job.resources.gpus_per_worker > 0 || !options.calibrate) return code;

  strategy::StepProfile profile = strategy::ReadStepProfile(output);
  Calibrate(job, options, profile, std::cout);
  WriteFileBytes(output, strategy::StepProfileToJson(profile));
  std::cout << fmt::format(
                   "profile: in a job, a collective costs {:.3f} ms, a parameter-server round "
                   "{:.3f} ms beyond their bytes (waiting for {:.0f}% of its wire), an all-reduce "
                   "step {:.3f} ms beyond those, a link carrying data both ways reaches {:.0f}% "
                   "of its payload rate, and a collective beside backward {:.0f}% of its speed; "
                   "wrote {}",
                   profile.collective_seconds * 1e3, profile.ps_round_seconds * 1e3,
                   profile.ps_wire_share * 100, profile.all_reduce_overhead_seconds * 1e3,
                   profile.duplex_efficiency * 100, profile.overlap_efficiency * 100, output)
            << std::endl;
  return 0;
}

}  // namespace autodist::cli
