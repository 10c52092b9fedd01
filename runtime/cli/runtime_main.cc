// `autodist-runtime`: trains an ONNX model (forward + loss inside the graph) in one process, or
// runs one member of a distributed job (`--job job.yaml --node worker-1 --coordinator host:port`,
// see job_member.h). Flags are parsed here; the training loop lives in runtime/exec.
// Exit codes: 0 success, 2 bad usage or bad input, 1 failure (e.g. training diverged), 3 the job
// failed elsewhere and this member was stopped.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <map>

#include "runtime/cli/job_member.h"
#include "runtime/cli/step_profiler.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/data/fashion_mnist.h"
#include "runtime/exec/device_backend.h"
#include "runtime/exec/trainer.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/member_exit.h"
#include "runtime/observe/operability_server.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/observe/timeline.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/precision.h"
#include "runtime/tensor/storage.h"

namespace {

using autodist::job::kMemberExitBadInput;
using autodist::job::kMemberExitFailure;

std::vector<std::pair<std::string, std::string>> ParseFiles(const std::vector<std::string>& pairs,
                                                            const std::string& flag) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& pair : pairs) {
    const size_t equals = pair.find('=');
    AD_CHECK(equals != std::string::npos && equals > 0 && equals + 1 < pair.size(),
             kInvalidArgument, "{} expects input=file, got '{}'", flag, pair);
    files.emplace_back(pair.substr(0, equals), pair.substr(equals + 1));
  }
  return files;
}

std::map<std::string, std::string> ParseOptions(const std::vector<std::string>& pairs,
                                                const std::string& flag) {
  std::map<std::string, std::string> options;
  for (const auto& [key, value] : ParseFiles(pairs, flag)) options[key] = value;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"autodist-runtime: train an ONNX model (forward pass + loss) on this machine"};
  app.set_version_flag("--version", "autodist-runtime 0.1.0");
  autodist::exec::TrainerOptions options;
  std::string data = "none";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::vector<std::string> train;
  std::vector<std::string> eval;
  std::string optimizer = "sgd";
  float lr = 0.01F;
  std::vector<std::string> optimizer_options;
  std::vector<std::string> schedule_options;
  std::string schedule = "constant";
  bool no_shuffle = false;
  int threads = 0;
  std::string device = "cpu";
  std::string precision = "fp32";

  autodist::cli::MemberOptions member;
  int64_t heartbeat_interval_ms = member.heartbeat_interval.count();
  int64_t heartbeat_timeout_ms = member.heartbeat_timeout.count();
  int64_t rendezvous_timeout_s =
      std::chrono::duration_cast<std::chrono::seconds>(member.rendezvous_timeout).count();
  auto* job_flag = app.add_option("--job", member.job_file,
                                  "Run one member of this AutoDistJob manifest (distributed mode)");
  app.add_option("--node", member.node, "With --job: this member's node (worker-0, ps-1, ...)")
      ->needs(job_flag);
  app.add_option("--coordinator", member.coordinator,
                 "With --job: host:port of the coordinator (the chief serves it there)")
      ->needs(job_flag);
  app.add_option("--listen", member.listen, "With --job: address this member serves on")
      ->needs(job_flag);
  app.add_option("--advertise-host", member.advertise_host,
                 "With --job: host the others reach this member at (default: --listen's)")
      ->needs(job_flag);
  app.add_option("--job-id", member.job_id, "With --job: job identity (default: metadata.name)")
      ->needs(job_flag);
  app.add_option("--result-file", member.result_file,
                 "With --job: write this member's result (JSON) here")
      ->needs(job_flag);
  app.add_option("--tls-dir", member.tls_dir,
                 "With --job: this member's credentials (ca.crt, tls.crt, tls.key); every "
                 "connection of the job is mutual TLS with them")
      ->needs(job_flag);
  app.add_flag("--insecure", member.insecure,
               "With --job: plaintext and unauthenticated instead of --tls-dir (docs/security.md)")
      ->needs(job_flag);
  std::string profile_job;
  std::string profile_output;
  autodist::cli::ProfileOptions profile_options;
  auto* profile_flag = app.add_option(
      "--profile-job", profile_job,
      "Measure this AutoDistJob's step for Auto's cost model (what `autodist profile` runs)");
  profile_flag->excludes(job_flag);
  app.add_option("--profile-output", profile_output, "With --profile-job: the profile (JSON)")
      ->needs(profile_flag);
  app.add_option("--profile-steps", profile_options.steps, "With --profile-job: steps measured")
      ->check(CLI::PositiveNumber)
      ->needs(profile_flag);
  app.add_option("--profile-warmup", profile_options.warmup_steps,
                 "With --profile-job: steps run first and not measured")
      ->check(CLI::NonNegativeNumber)
      ->needs(profile_flag);
  double network_bandwidth_gbps = 0;
  app.add_option("--network-bandwidth-gbps", network_bandwidth_gbps,
                 "With --job: each link's rate for Auto, where the manifest states none")
      ->check(CLI::PositiveNumber)
      ->needs(job_flag);
  bool no_ps_data_channel = false;
  app.add_flag("--no-ps-data-channel", no_ps_data_channel,
               "With --job: parameter-server Steps over gRPC only, without the data channel")
      ->needs(job_flag);
  app.add_option("--heartbeat-interval-ms", heartbeat_interval_ms, "With --job: heartbeat period")
      ->check(CLI::PositiveNumber)
      ->needs(job_flag);
  app.add_option("--heartbeat-timeout-ms", heartbeat_timeout_ms,
                 "With --job: a member silent this long fails the job")
      ->check(CLI::PositiveNumber)
      ->needs(job_flag);
  app.add_option("--rendezvous-timeout-s", rendezvous_timeout_s,
                 "With --job: how long to wait for every member to register")
      ->check(CLI::PositiveNumber)
      ->needs(job_flag);
  auto* model_flag =
      app.add_option("--model", options.model, "ONNX model with the loss inside the graph");
  model_flag->excludes(job_flag);
  app.add_option("--loss", options.loss,
                 "Name of the loss output (default: 'loss' or the only "
                 "scalar output)");
  app.add_option("--data", data, "Built-in data set: fashion-mnist, or none to use --train/--eval")
      ->check(CLI::IsMember({"fashion-mnist", "none"}));
  app.add_option("--data-dir", data_dir, "Where the built-in data set's files are");
  app.add_option("--train", train, "Training array for a graph input: input=file (IDX/NPY)");
  app.add_option("--eval", eval, "Evaluation array for a graph input: input=file");
  app.add_option("--optimizer", optimizer, "sgd, adam, adamw, adagrad or rmsprop");
  app.add_option("--lr", lr, "Learning rate");
  app.add_option("--opt", optimizer_options, "Optimizer option key=value, e.g. momentum=0.9");
  app.add_option("--schedule", schedule, "Learning-rate schedule: constant, step or cosine");
  app.add_option("--schedule-opt", schedule_options,
                 "Schedule option key=value, e.g. warmup_steps=100");
  app.add_option("--batch-size", options.batch_size, "Samples per step")
      ->check(CLI::PositiveNumber);
  app.add_option("--eval-batch-size", options.eval_batch_size, "Samples per evaluation batch")
      ->check(CLI::PositiveNumber);
  app.add_option("--epochs", options.epochs, "Epochs to train (or --steps)");
  app.add_option("--steps", options.steps, "Steps to train (or --epochs)");
  app.add_option("--seed", options.seed, "Seed of shuffling and dropout");
  app.add_flag("--no-shuffle", no_shuffle, "Read the training data in file order");
  app.add_option("--log-every", options.log_every, "Progress line every N steps");
  app.add_option("--eval-every", options.eval_every, "Evaluate every N steps (0: every epoch)");
  app.add_option("--checkpoint-dir", options.checkpoint_dir, "Directory for checkpoints");
  app.add_option("--checkpoint-every", options.checkpoint_every, "Checkpoint every N steps");
  app.add_flag("--resume", options.resume,
               "Continue from the latest checkpoint (with --job: even when the manifest's "
               "spec.training.checkpoint.resume is false)");
  app.add_option("--checkpoint-keep", options.checkpoint_keep,
                 "Newest checkpoints kept, older ones deleted (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--export", options.export_path, "Write the trained model (ONNX) here");
  app.add_flag("--export-external-data", options.export_options.external_data,
               "Write the exported model's initializers to <export>.data (ONNX external data)");
  app.add_option("--threads", threads, "Compute threads (default: all cores)");
  app.add_option("--device", device, "Train on cpu, cuda (GPU 0) or cuda:N")->excludes(job_flag);
  app.add_option(
         "--precision", precision,
         "Matrix products and convolutions in fp32, or on a GPU tf32 or bf16 (mixed precision)")
      ->excludes(job_flag);
  std::string timeline;
  app.add_option("--timeline", timeline,
                 "Record where this process's time goes into this Chrome trace-event file (open "
                 "it in Perfetto)");
  std::string tensorboard;
  app.add_option("--tensorboard", tensorboard,
                 "Write TensorBoard event files here (with --job: under DIR/<node>, instead of "
                 "spec.training.tensorboard.path)");
  std::string metrics_bind_address;
  app.add_option("--metrics-bind-address", metrics_bind_address,
                 "Serve Prometheus /metrics (and /healthz, /readyz) at [HOST]:PORT, e.g. ':9400'");
  app.add_option("--logits", options.logits, "Output compared with the labels for accuracy");
  app.add_option("--labels", options.labels, "Input holding class labels, for accuracy");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : kMemberExitBadInput;
  }

  try {
    // The tensor pool's cap is read here, where the process starts, and nowhere else.
    autodist::tensor::ConfigureTensorPool(
        autodist::tensor::ParseTensorPoolOptions(std::getenv(autodist::tensor::kTensorPoolEnv)));
    // Up before anything else, so that a scrape finds the process from its start; its metrics
    // are plain text and read-only (docs/security.md).
    std::unique_ptr<autodist::observe::OperabilityServer> metrics_server;
    if (!metrics_bind_address.empty()) {
      metrics_server = std::make_unique<autodist::observe::OperabilityServer>(
          autodist::observe::ParseBindAddress(metrics_bind_address),
          autodist::observe::ProcessMetrics().registry);
      metrics_server->Start();
      std::cout << "serving /metrics on " << metrics_server->url() << std::endl;
    }
    if (!profile_job.empty()) {
      AD_CHECK(!profile_output.empty(), kInvalidArgument, "--profile-job needs --profile-output");
      profile_options.threads = threads;
      const autodist::strategy::StepProfile profile =
          autodist::cli::ProfileJob(autodist::job::LoadJobFile(profile_job), profile_options);
      autodist::WriteFileBytes(profile_output, autodist::strategy::StepProfileToJson(profile));
      std::cout << fmt::format(
                       "profile: forward {:.3f} ms, backward {:.3f} ms, update {:.3f} ms per "
                       "worker step ({} samples per replica, {} replica(s)); wrote {}",
                       profile.forward_seconds * 1e3, profile.backward_seconds * 1e3,
                       profile.update_seconds * 1e3, profile.batch_per_replica,
                       profile.replicas_per_worker, profile_output)
                << std::endl;
      return 0;
    }
    if (!member.job_file.empty()) {
      AD_CHECK(!member.node.empty() && !member.coordinator.empty(), kInvalidArgument,
               "--job needs --node and --coordinator");
      member.threads = threads;
      member.tensorboard_dir = tensorboard;
      member.timeline_path = timeline;
      member.ps_data_channel = !no_ps_data_channel;
      if (network_bandwidth_gbps > 0) member.network_bandwidth_gbps = network_bandwidth_gbps;
      member.resume = options.resume;
      member.heartbeat_interval = std::chrono::milliseconds(heartbeat_interval_ms);
      member.heartbeat_timeout = std::chrono::milliseconds(heartbeat_timeout_ms);
      member.rendezvous_timeout = std::chrono::seconds(rendezvous_timeout_s);
      return autodist::cli::RunMember(member);
    }
    AD_CHECK(!options.model.empty(), kInvalidArgument, "give --model (or --job)");
    if (threads > 0) autodist::ops::SetNumThreads(threads);
    // A GPU asked for and not there is an error naming the flag, never a CPU run.
    const std::string device_flag = "--device " + device;
    options.device = autodist::tensor::ParseDevice(device, "--device");
    options.precision = autodist::ops::ParsePrecision(precision, "--precision");
    AD_CHECK(options.precision == autodist::ops::Precision::kFp32 || !options.device.is_cpu(),
             kInvalidArgument, "--precision {} needs a GPU (--device cuda); the CPU computes fp32",
             precision);
    const std::string devices =
        autodist::exec::UseDevices(options.device.kind, options.device.index + 1, device_flag);
    if (!devices.empty()) {
      std::cout << fmt::format("training on {} ({})", autodist::tensor::DeviceName(options.device),
                               devices)
                << std::endl;
    }
    options.shuffle = !no_shuffle;
    options.tensorboard_dir = tensorboard;
    if (data == "fashion-mnist") {
      options.train_files = autodist::data::FashionMnistFiles("train", data_dir);
      options.eval_files = autodist::data::FashionMnistFiles("test", data_dir);
    }
    const auto extra_train = ParseFiles(train, "--train");
    const auto extra_eval = ParseFiles(eval, "--eval");
    options.train_files.insert(options.train_files.end(), extra_train.begin(), extra_train.end());
    options.eval_files.insert(options.eval_files.end(), extra_eval.begin(), extra_eval.end());
    auto parsed = ParseOptions(optimizer_options, "--opt");
    parsed["lr"] = fmt::format("{}", lr);
    options.optimizer = autodist::optim::ParseOptimizerOptions(optimizer, parsed);
    auto schedule_parsed = ParseOptions(schedule_options, "--schedule-opt");
    schedule_parsed["kind"] = schedule;
    options.schedule = autodist::optim::ParseScheduleOptions(schedule_parsed);

    const std::unique_ptr<autodist::observe::Timeline> recording =
        autodist::observe::StartTimeline(timeline, "autodist-runtime");
    const autodist::exec::TrainResult result = autodist::exec::Train(options);
    autodist::observe::FinishTimeline(recording.get(), "autodist-runtime");
    std::cout << fmt::format("trained {} steps in {:.1f} s ({:.0f} samples/s), last loss {:.4f}",
                             result.steps, result.seconds, result.samples_per_second,
                             result.last_loss);
    if (result.eval) {
      std::cout << fmt::format("; eval loss {:.4f}", result.eval->loss);
      if (result.eval->accuracy)
        std::cout << fmt::format(", accuracy {:.4f}", *result.eval->accuracy);
    }
    std::cout << std::endl;
  } catch (const autodist::Error& error) {
    std::cerr << "autodist-runtime: error: " << error.what() << "\n";
    return error.IsUserError() ? kMemberExitBadInput : kMemberExitFailure;
  } catch (const std::exception& error) {
    std::cerr << "autodist-runtime: internal error: " << error.what() << "\n";
    return kMemberExitFailure;
  }
  return 0;
}
