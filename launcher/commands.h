// The `autodist` subcommands as plain functions, so tests can run them in-process. Each throws
// autodist::Error on bad input; main.cc turns that into a message and exit code 2.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/strategy/resource_spec.h"

namespace autodist::cli {

struct InspectOptions {
  std::string model;            // ONNX model or GraphItem file
  bool strip_weights = false;   // with output: drop initializer data
  std::string output;           // write the GraphItem here (binary) when set
  std::string backend = "cpu";  // the kernels every node must have: cpu or cuda
};

// Prints the variable table of the model to `out`; writes the GraphItem when asked.
void RunInspect(const InspectOptions& options, std::ostream& out);

struct CompileOptions {
  std::string model;                              // ONNX model or GraphItem file
  std::string resources;                          // resource_spec.yml; or use `counts`
  std::optional<strategy::ReplicaCounts> counts;  // from --workers/--gpus-per-worker/--ps
  std::string builder = "Auto";
  std::vector<std::string> options;   // "key=value"
  std::vector<std::string> colocate;  // "a,b,c" per group
  std::string format = "text";        // text | json | binary
  std::string output;                 // file; empty: standard output
  bool stdout_is_terminal = false;    // refuse binary output to a terminal
  // Compile even when a node has no kernel on the backend the resources imply (a plan for a model
  // this release cannot train yet, to read or to hand to another runtime).
  bool skip_kernel_check = false;
  // Auto's inputs (strategy/auto_search.h): a step profile (`autodist profile`), else the
  // estimate at batch_size samples per replica; lossy compressors allowed or not; the bandwidth
  // of links the resources leave unstated.
  std::string profile;
  int64_t batch_size = 32;
  bool allow_lossy_compression = false;
  double network_bandwidth_gbps = 10;
  double network_latency_us = 50;  // the cost model's, one message one way
  // The job's optimizer, for the cost model (what a parameter server sends back of sparse
  // tables); empty: unknown, every row assumed to move each step.
  std::string optimizer;
  std::vector<std::string> optimizer_options;  // "key=value"
  bool explain = false;                        // print Auto's ranked candidates
};

// Compiles and writes the Strategy; the summary goes to `out` when the strategy goes to a file,
// otherwise to `err` (so standard output holds exactly the strategy).
void RunCompile(const CompileOptions& options, std::ostream& out, std::ostream& err);

struct TimelineMergeOptions {
  std::string directory;  // the members' <member>.timeline.json files
  std::string output;     // the merged trace; empty: <directory>/job.trace.json
};

// Merges every member timeline in the directory into one trace (workers, then parameter servers,
// each by index), says so on `out` and returns how many went in. Throws NotFound naming the
// directory when it is missing or holds none, InvalidArgument naming a file that is not a
// timeline.
int RunTimelineMerge(const TimelineMergeOptions& options, std::ostream& out);

struct ReportOptions {
  std::string tensorboard;  // the workers' event files, a subdirectory each (worker-0, ...)
  std::string timeline;     // the members' timelines (merged into job.trace.json); "": none
  std::string summary;      // the compiled strategy's summary (the ConfigMap's summary.txt)
  std::string name;         // the job's name; "": the tensorboard directory's
  std::string output = "report.html";
};

// `autodist report`: the run report (launcher/run_report.h) of a job that ran elsewhere, from
// the files it left: what a cluster job writes to its volumes. Says where it wrote the page on
// `out`. Throws NotFound naming a directory or file that is missing or holds no event file.
void RunReportFromFiles(const ReportOptions& options, std::ostream& out);

struct NetworkCommandOptions {
  int hosts = 2;                     // namespaces h0 .. h<hosts-1>
  std::string rate = "unshaped";     // each link, each direction (netemu/link_rate.h)
  double latency_ms = 0;             // one-way delay between two hosts; 0: none (needs netem)
  std::vector<std::string> command;  // run beside the network; argv[0] looked up in PATH
};

// `autodist network`: builds an emulated network (netemu/emulated_network.h), runs `command` in
// this namespace with the hosts in its environment (AUTODIST_NETWORK_HOSTS, and for each host i
// AUTODIST_NETWORK_ADDRESS_<i> and AUTODIST_NETWORK_NETNS_<i>, a path for `nsenter --net=`;
// AUTODIST_NETWORK_CALLER, this namespace's address on it), and removes the network when the
// command ends. Describes the network on `err`. Returns the command's exit code, 128 + signal
// when it was killed. Throws InvalidArgument for a bad rate or host count, FailedPrecondition
// where namespaces cannot be created or netem is missing for a latency.
int RunNetwork(const NetworkCommandOptions& options, std::ostream& err);

struct ProfileCommandOptions {
  std::string manifest;
  std::string output = "profile.json";
  int steps = 20;       // measured, after a few warm-up steps
  int threads = 0;      // compute threads; 0: all cores
  std::string runtime;  // the autodist-runtime executable; default: next to `autodist`
  // Then run the job on 2 local workers (AllReduce, then PS) to measure what a collective and a
  // parameter-server round cost inside a job here (profile_command.cc).
  bool calibrate = true;
  // The calibration runs' network: empty, loopback; else an emulated one of this rate
  // (`autodist run --network`), to meet the costs of the network the job will run on.
  std::string network;
};

// `autodist profile`: measures the job's step on this machine (runtime/cli/step_profiler.h) by
// running autodist-runtime --profile-job, and writes the profile Auto reads
// (spec.strategy.profile, `autodist compile --profile`). Returns the runtime's exit code.
int RunProfile(const ProfileCommandOptions& options);

}  // namespace autodist::cli
