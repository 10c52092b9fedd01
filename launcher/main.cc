// `autodist`: the command-line entry point. Parses flags with CLI11 and hands typed options to
// the commands (commands.h, run_command.h). Exit codes: 0 success, 2 bad usage or bad input,
// 1 internal error or a failed job, 128 + signal when `run` was interrupted.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "launcher/commands.h"
#include "launcher/progress_printer.h"
#include "launcher/run_command.h"
#include "runtime/common/error.h"
#include "runtime/strategy/compiler.h"

namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 1;

void AddInspect(CLI::App& app, autodist::cli::InspectOptions& options) {
  auto* inspect = app.add_subcommand(
      "inspect", "Show a model's variables: shape, dtype, bytes, dense/sparse, partitionable");
  inspect->add_option("model", options.model, "ONNX model or GraphItem file")->required();
  inspect->add_flag("--strip-weights", options.strip_weights,
                    "With -o: keep shapes but drop initializer data (fits a ConfigMap)");
  inspect->add_option("-o,--output", options.output, "Write the GraphItem (binary) to this file");
  inspect
      ->add_option("--backend", options.backend,
                   "The kernels every node must have: cpu, or cuda for GPU workers")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_str("cpu");
}

void AddCompile(CLI::App& app, autodist::cli::CompileOptions& options,
                autodist::strategy::ReplicaCounts& counts, bool& counts_given) {
  auto* compile = app.add_subcommand(
      "compile", "Compile a distribution Strategy for a model and a set of machines");
  compile->add_option("--model", options.model, "ONNX model or GraphItem file")->required();
  compile->add_option("--resources", options.resources,
                      "AutoDist resource_spec.yml (default: this machine, one CPU replica)");
  compile->add_option("--strategy", options.builder, "Strategy builder")
      ->check(CLI::IsMember(autodist::strategy::BuilderNames()))
      ->default_str("Auto");
  compile->add_option("--option", options.options, "Builder option key=value (repeatable)");
  compile->add_option("--colocate", options.colocate,
                      "Variables kept on one parameter server, comma-separated (repeatable)");
  compile->add_option("--format", options.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "binary"}))
      ->default_str("text");
  compile->add_option("-o,--output", options.output, "Write the strategy to this file");
  compile->add_flag("--explain", options.explain,
                    "Print the predicted step time (compute, communication, total, the busiest "
                    "link's bytes); with Auto, of every candidate, ranked");
  compile->add_option("--profile", options.profile,
                      "For Auto and --explain: the step profile `autodist profile` wrote "
                      "(default: an estimate from the variables)");
  compile
      ->add_option("--batch-size", options.batch_size,
                   "With Auto and no --profile: samples per replica for the estimate")
      ->default_str("32");
  compile->add_flag("--allow-lossy-compression", options.allow_lossy_compression,
                    "With Auto: consider float16, PowerSGD and TopK compression");
  compile
      ->add_option("--network-bandwidth-gbps", options.network_bandwidth_gbps,
                   "Links the resources give no network_bandwidth, in Gbit/s")
      ->default_str("10");
  compile
      ->add_option("--network-latency-us", options.network_latency_us,
                   "For Auto and --explain: one message's one-way latency, in microseconds")
      ->default_str("50");
  compile->add_option("--optimizer", options.optimizer,
                      "For Auto and --explain: the job's optimizer (sgd, adam, ...); with one that "
                      "leaves absent rows alone, parameter servers send back only changed rows "
                      "(default: unknown, whole tables)");
  compile->add_option("--optimizer-option", options.optimizer_options,
                      "An option of --optimizer, key=value as the optimizer names it (momentum, "
                      "lazy_sparse; repeatable)");
  compile->add_flag("--skip-kernel-check", options.skip_kernel_check,
                    "Compile even when a node of the model has no kernel on the backend the "
                    "resources imply (cuda with GPUs, else cpu)");
  auto* workers = compile->add_option("--workers", counts.workers,
                                      "Instead of --resources: number of worker nodes");
  auto* gpus = compile->add_option("--gpus-per-worker", counts.gpus_per_worker,
                                   "GPUs per worker (0: CPU replicas)");
  auto* replicas = compile->add_option("--replicas-per-worker", counts.replicas_per_worker,
                                       "CPU replicas per GPU-less worker");
  auto* ps = compile->add_option("--ps", counts.parameter_servers,
                                 "Dedicated parameter-server nodes (0: workers host them)");
  compile->callback([&, workers, gpus, replicas, ps] {
    counts_given = workers->count() + gpus->count() + replicas->count() + ps->count() > 0;
  });
}

void AddRun(CLI::App& app, autodist::cli::RunOptions& options) {
  auto* run =
      app.add_subcommand("run", "Run an AutoDistJob manifest on this machine as local processes");
  run->add_option("manifest", options.manifest, "AutoDistJob manifest (YAML)")->required();
  run->add_option("--log-dir", options.log_dir,
                  "Where each process's log goes (default: ./autodist-logs/<job name>)");
  run->add_option("--port", options.port,
                  "Coordinator port on 127.0.0.1 (default: a free one); with --network, on the "
                  "chief's address (default 29400)")
      ->check(CLI::Range(1, 65535));
  run->add_flag("-v,--verbose", options.verbose, "Also print every process's output");
  run->add_option("--runtime", options.runtime,
                  "The autodist-runtime executable (default: next to autodist)");
  run->add_option("--threads", options.threads,
                  "Compute threads per worker (default: the cores shared among the workers)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--timeline", options.timeline,
                  "Record where each process's time goes and merge it into this Chrome "
                  "trace-event file (open it in Perfetto)");
  run->add_option("--tensorboard", options.tensorboard,
                  "Write TensorBoard event files under DIR/<worker> (instead of "
                  "spec.training.tensorboard.path)");
  run->add_option("--metrics-port", options.metrics_port,
                  "Each process serves Prometheus /metrics on 127.0.0.1, from this port up in "
                  "member order, as the launcher lists them")
      ->check(CLI::Range(1, 65535));
  run->add_option("--max-processes", options.max_processes,
                  "Allow the job this many local processes (default: what the machine holds, "
                  "16 per core and one per 64 MiB of available memory)")
      ->check(CLI::PositiveNumber);
  run->add_flag("--fresh", options.fresh,
                "Train from step 0: delete the checkpoints in spec.training.checkpoint.path first "
                "(without it, a run resumes from the newest, and a finished job is not run again)");
  run->add_option("--network", options.network,
                  "Run every member in its own network namespace on links of this rate, as if "
                  "on a real network: 100mbit, 1gbit, 2.5gbit, ... or unshaped (root only; "
                  "docs/networks.md)");
  run->add_option("--network-latency-ms", options.network_latency_ms,
                  "With --network: one-way delay between two members (needs tc's netem)")
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--insecure", options.insecure,
                "Run the members without the run's own CA: plaintext and unauthenticated, even "
                "to other users of this machine (docs/security.md)");
}

void AddTimeline(CLI::App& app, autodist::cli::TimelineMergeOptions& options) {
  auto* timeline = app.add_subcommand(
      "timeline",
      "Merge the timelines a job's members wrote (spec.training.timeline.path) into one "
      "trace for Perfetto");
  timeline->add_option("directory", options.directory, "Directory of <member>.timeline.json files")
      ->required();
  timeline->add_option("-o,--output", options.output,
                       "The merged trace (default: DIRECTORY/job.trace.json)");
}

void AddReport(CLI::App& app, autodist::cli::ReportOptions& options) {
  auto* report = app.add_subcommand(
      "report", "Write the run report of a job from the files it left (a cluster job's volumes)");
  report
      ->add_option("--tensorboard", options.tensorboard,
                   "The job's spec.training.tensorboard.path: a directory per worker")
      ->required();
  report->add_option("--timeline", options.timeline,
                     "The job's spec.training.timeline.path (merged into job.trace.json there)");
  report->add_option("--summary", options.summary,
                     "The strategy summary: kubectl get cm <job>-autodist -o "
                     "jsonpath='{.data.summary\\.txt}'");
  report->add_option("--name", options.name, "The job's name (default: the directory's)");
  report->add_option("-o,--output", options.output, "The page (default: report.html)");
}

void AddNetwork(CLI::App& app, autodist::cli::NetworkCommandOptions& options) {
  auto* network = app.add_subcommand(
      "network",
      "Run a command beside an emulated network: hosts in network namespaces joined by a "
      "bridge, links shaped with tc (root only; docs/networks.md)");
  network->add_option("--hosts", options.hosts, "Hosts, one network namespace each")
      ->check(CLI::Range(1, 250))
      ->default_str("2");
  network
      ->add_option("--rate", options.rate,
                   "Each host's link, each direction: 100mbit, 1gbit, 2.5gbit, ... or unshaped")
      ->default_str("unshaped");
  network
      ->add_option("--latency-ms", options.latency_ms,
                   "One-way delay between two hosts (needs tc's netem in the kernel)")
      ->check(CLI::NonNegativeNumber);
  network
      ->add_option("command", options.command,
                   "The command and its arguments, after --; it finds the hosts in "
                   "AUTODIST_NETWORK_* variables")
      ->required();
}

void AddProfile(CLI::App& app, autodist::cli::ProfileCommandOptions& options) {
  auto* profile = app.add_subcommand(
      "profile",
      "Measure a job's training step on this machine for Auto's cost model: forward, backward, "
      "update, when each gradient is ready, rows a sparse table's step touches");
  profile->add_option("manifest", options.manifest, "AutoDistJob manifest (YAML)")->required();
  profile->add_option("-o,--output", options.output, "The profile (JSON)")
      ->default_str("profile.json");
  profile->add_option("--steps", options.steps, "Steps measured (after 3 warm-up steps)")
      ->check(CLI::PositiveNumber)
      ->default_str("20");
  profile
      ->add_option("--threads", options.threads,
                   "Compute threads, as one worker of the job will have them (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  profile->add_option("--runtime", options.runtime,
                      "The autodist-runtime executable (default: next to autodist)");
  profile->add_option("--network", options.network,
                      "Run the calibration on an emulated network of this rate, as `autodist run "
                      "--network` (root; docs/networks.md): the costs of the network the job will "
                      "run on");
  profile->add_flag_callback(
      "--no-calibration", [&options] { options.calibrate = false; },
      "Skip the two short 2-worker runs that measure what a collective and a parameter-server "
      "round cost inside a job on this machine");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"AutoDist for Kubernetes: compile and run distributed training strategies"};
  app.set_version_flag("--version", "autodist 0.1.0");
  app.require_subcommand(1);

  autodist::cli::InspectOptions inspect_options;
  autodist::cli::CompileOptions compile_options;
  autodist::strategy::ReplicaCounts counts;
  bool counts_given = false;
  AddInspect(app, inspect_options);
  AddCompile(app, compile_options, counts, counts_given);
  autodist::cli::RunOptions run_options;
  AddRun(app, run_options);
  autodist::cli::TimelineMergeOptions timeline_options;
  AddTimeline(app, timeline_options);
  autodist::cli::ReportOptions report_options;
  AddReport(app, report_options);
  autodist::cli::NetworkCommandOptions network_options;
  AddNetwork(app, network_options);
  autodist::cli::ProfileCommandOptions profile_options;
  AddProfile(app, profile_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : kExitBadInput;
  }

  try {
    if (app.got_subcommand("inspect")) {
      autodist::cli::RunInspect(inspect_options, std::cout);
    } else if (app.got_subcommand("compile")) {
      if (counts_given) compile_options.counts = counts;
      compile_options.stdout_is_terminal = isatty(STDOUT_FILENO) == 1;
      autodist::cli::RunCompile(compile_options, std::cout, std::cerr);
    } else if (app.got_subcommand("run")) {
      run_options.live_progress =
          autodist::launcher::ProgressPrinterOptions::ForStandardOutput().live;
      return autodist::cli::RunJob(run_options, std::cout, std::cerr);
    } else if (app.got_subcommand("timeline")) {
      autodist::cli::RunTimelineMerge(timeline_options, std::cout);
    } else if (app.got_subcommand("report")) {
      autodist::cli::RunReportFromFiles(report_options, std::cout);
    } else if (app.got_subcommand("profile")) {
      return autodist::cli::RunProfile(profile_options);
    } else if (app.got_subcommand("network")) {
      return autodist::cli::RunNetwork(network_options, std::cerr);
    }
  } catch (const autodist::Error& error) {
    std::cerr << "autodist: error: " << error.what() << "\n";
    return error.IsUserError() ? kExitBadInput : kExitInternal;
  } catch (const std::exception& error) {
    std::cerr << "autodist: internal error: " << error.what() << "\n";
    return kExitInternal;
  }
  std::cout.flush();
  return 0;
}
