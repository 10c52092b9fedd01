#include "launcher/run_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "launcher/coordinator_port.h"
#include "launcher/finished_run.h"
#include "launcher/interrupt_guard.h"
#include "launcher/local_limit.h"
#include "launcher/netemu/emulated_network.h"
#include "launcher/netemu/link_rate.h"
#include "launcher/process_group.h"
#include "launcher/progress_printer.h"
#include "launcher/run_credentials.h"
#include "launcher/run_report.h"
#include "launcher/run_summary.h"
#include "launcher/runtime_executable.h"
#include "launcher/worker_gpus.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/coordinator/client.h"
#include "runtime/coordinator/job.h"
#include "runtime/graph/graph_item.h"
#include "runtime/graph/op_support.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/job_views.h"
#include "runtime/job/member_result.h"
#include "runtime/observe/event_file.h"
#include "runtime/observe/timeline_merge.h"

namespace autodist::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using launcher::ProcessExit;
using launcher::ProcessGroup;
using observe::kMergedTimelineName;
using observe::kTimelineSuffix;

constexpr int kExitJobFailed = 1;
constexpr size_t kFailureLines = 20;
constexpr auto kPollInterval = std::chrono::milliseconds(250);
// A member's heartbeat period (1 s) and a margin: how long stopping members get to hear why the
// job stops, say so in their logs ("stopped: worker-1 ... failed: ...") and finish their
// timelines, before the signals.
constexpr auto kAbortGrace = std::chrono::milliseconds(2000);
constexpr auto kStatusInterval = std::chrono::milliseconds(500);
// autodist-runtime's exit code for "stopped because another member failed" (job_member.h).
constexpr int kMemberStoppedByJobFailure = 3;
constexpr auto kCauseWait = std::chrono::seconds(5);
// The coordinator's port on an emulated network, where the chief has a namespace to itself.
constexpr int kEmulatedCoordinatorPort = 29400;

int DefaultThreads(int workers) {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, workers));
}

class JobRun {
 public:
  JobRun(const RunOptions& options, std::ostream& out, std::ostream& err)
      : options_(options),
        out_(out),
        err_(err),
        job_(job::LoadJobFile(options.manifest)),
        printer_(out, launcher::ProgressPrinterOptions{options.live_progress,
                                                       std::chrono::milliseconds(10000), 0}) {}

  int Run() {
    CheckInputs();
    if (options_.fresh) {
      StartOver();
    } else if (const std::optional<FinishedRun> finished = FindFinishedRun(job_)) {
      // Starting every process for a run of zero steps would report a 1-second "success".
      out_ << fmt::format(
                  "autodist run: job {} is already complete at step {} (checkpoint in {}); give "
                  "--fresh to train it again from step 0",
                  job_.metadata.name, finished->step, job_.training.checkpoint->path)
           << std::endl;
      return 0;
    }
    const strategy::ResourceSpec resources =
        strategy::ResourceSpec::FromReplicaCounts(job::ToReplicaCounts(job_));
    members_ = coordinator::ExpectedMembers(resources);
    BuildNetwork();
    if (network_) {
      coordinator_endpoint_ =
          fmt::format("{}:{}", network_->Host(members_.front().node).address,
                      options_.port != 0 ? options_.port : kEmulatedCoordinatorPort);
    } else {
      coordinator_endpoint_ =
          fmt::format("127.0.0.1:{}", launcher::ChooseCoordinatorPort(options_.port));
    }
    log_dir_ = options_.log_dir.empty()
                   ? (fs::current_path() / "autodist-logs" / job_.metadata.name).string()
                   : options_.log_dir;
    launcher::InterruptGuard interrupt;
    ProcessGroup group(log_dir_, Echo());
    ChooseTimeline();
    ChooseTensorBoard();
    for (const coordinator::MemberInfo& member : members_) {
      fs::remove(ResultFile(member.node));
      // A member that fails early must not leave an old timeline behind.
      if (!merged_timeline_.empty()) fs::remove(TimelineFile(member.node));
    }
    out_ << fmt::format("autodist run: job {} with {} workers and {} parameter servers; logs in {}",
                        job_.metadata.name, CountRole(coordinator::MemberRole::kWorker),
                        CountRole(coordinator::MemberRole::kParameterServer), log_dir_)
         << std::endl;
    started_ = Clock::now();
    ShowMetricsAddresses();
    ShowWorkerGpus();
    MakeCredentials();
    for (size_t i = 0; i < members_.size(); ++i) group.Start(Spec(i));
    coordinator::CoordinatorClientOptions progress_calls;
    progress_calls.credentials = credentials_ ? credentials_->launcher() : nullptr;
    coordinator_.emplace(coordinator_endpoint_, progress_calls);
    const int code = Watch(group, interrupt);
    MergeTimeline();
    WriteReport(code == 0);
    return code;
  }

 private:
  void CheckInputs() {
    // First: a job of 100000 workers must not get as far as a fork.
    CheckLocalProcessCount(options_.manifest, job_.resources.workers,
                           job_.resources.parameter_servers, options_.max_processes,
                           MachineProcessLimit());
    const std::string& model = job::RequireLocalModel(job_);
    AD_CHECK(fs::is_regular_file(model), kNotFound,
             "{}: spec.model.path: model file '{}' does not exist", options_.manifest, model);
    // Every node must have a kernel where the workers will run it: found out here, not by a
    // worker failing on its first unsupported op after the whole job started.
    const graph::GraphItem item = graph::GraphItem::Load(model);
    graph::CheckOpsSupported(item.ops(), job::WorkerBackend(job_), model);
    // Auto's profile, read and checked as the chief will: a wrong one fails here, not in it.
    job::ReadLocalProfile(job_, item.TrainableVariables());
    runtime_ = launcher::RuntimeExecutable(options_.runtime);
    if (!options_.network.empty())
      network_rate_ = netemu::ParseLinkRate(options_.network, "--network");
    AD_CHECK(options_.network_latency_ms == 0 || !options_.network.empty(), kInvalidArgument,
             "--network-latency-ms needs --network");
  }

  // --network: every member in a namespace of its own, the launcher joined to them (unshaped),
  // so that it still reads the chief's progress.
  void BuildNetwork() {
    if (options_.network.empty()) return;
    netemu::NetworkOptions network;
    for (const coordinator::MemberInfo& member : members_) network.hosts.push_back(member.node);
    network.bits_per_second = network_rate_;
    if (options_.network_latency_ms != 0) network.latency_ms = options_.network_latency_ms;
    network.reach_from_caller = true;
    network_ = std::make_unique<netemu::EmulatedNetwork>(network);
    out_ << "autodist run: emulated network: " << network_->Describe() << std::endl;
    if (job_.strategy.builder == "Auto" && network_rate_ &&
        !job_.resources.network_bandwidth_gbps) {
      out_ << fmt::format(
                  "autodist run: Auto plans for links of {} (--network; the manifest sets no "
                  "spec.resources.networkBandwidthGbps)",
                  netemu::FormatLinkRate(network_rate_))
           << std::endl;
    }
  }

  // --fresh: the checkpoints of earlier runs go, so the members start from step 0.
  void StartOver() {
    if (!job_.training.checkpoint.has_value()) return;
    const std::string& dir = job_.training.checkpoint->path;
    const int removed = checkpoint::RemoveCheckpoints(dir);
    if (removed > 0) {
      out_ << fmt::format("autodist run: --fresh: deleted {} checkpoint{} in {}", removed,
                          removed == 1 ? "" : "s", dir)
           << std::endl;
    }
  }

  // The run's own CA and its members' credentials, unless --insecure.
  void MakeCredentials() {
    if (options_.insecure) {
      err_ << "autodist run: --insecure: the members talk plaintext and accept any peer"
           << std::endl;
      return;
    }
    std::vector<std::string> nodes;
    nodes.reserve(members_.size());
    for (const coordinator::MemberInfo& member : members_) nodes.push_back(member.node);
    credentials_.emplace(job_.metadata.name, nodes);
  }

  int CountRole(coordinator::MemberRole role) const {
    return static_cast<int>(std::count_if(members_.begin(), members_.end(),
                                          [role](const auto& m) { return m.role == role; }));
  }

  // Where the members record their timelines and where they are merged: --timeline's file with
  // the members' files in the log folder, else the manifest's spec.training.timeline.path with
  // both there (the merged trace as job.trace.json); neither: no timeline.
  void ChooseTimeline() {
    if (!options_.timeline.empty()) {
      timeline_dir_ = fs::absolute(log_dir_).string();
      merged_timeline_ = options_.timeline;
    } else if (!job_.training.timeline_path.empty()) {
      timeline_dir_ = job_.training.timeline_path;
      merged_timeline_ = (fs::path(timeline_dir_) / kMergedTimelineName).string();
    } else {
      return;
    }
    std::error_code error;
    fs::create_directories(timeline_dir_, error);
    AD_CHECK(!error, kInvalidArgument, "{}: timeline directory '{}' cannot be created: {}",
             options_.timeline.empty() ? "spec.training.timeline.path" : "--timeline",
             timeline_dir_, error.message());
  }

  // Where the workers write their TensorBoard event files: --tensorboard, else the manifest's
  // path, else <log dir>/tensorboard, so that the report always has the run's curves. The files
  // already there belong to earlier runs and stay out of this run's report.
  void ChooseTensorBoard() {
    board_dir_ = !options_.tensorboard.empty() ? fs::absolute(options_.tensorboard).string()
                 : !job_.training.tensorboard_path.empty()
                     ? job_.training.tensorboard_path
                     : (fs::absolute(log_dir_) / "tensorboard").string();
    for (const coordinator::MemberInfo& member : members_) {
      if (member.role != coordinator::MemberRole::kWorker) continue;
      earlier_events_[member.node] = observe::EventFilesIn(BoardDir(member.node));
    }
  }

  std::string BoardDir(const std::string& node) const {
    return (fs::path(board_dir_) / node).string();
  }

  // report.html in the log folder, whatever the outcome; a report that cannot be written is a
  // warning, never the job's failure.
  void WriteReport(bool succeeded) {
    launcher::RunReport report;
    report.job_name = job_.metadata.name;
    report.outcome = outcome_;
    report.succeeded = succeeded;
    report.wall_seconds = Seconds(Clock::now() - started_);
    report.generated_at = launcher::UtcNow();
    const std::string path = (fs::path(log_dir_) / "report.html").string();
    try {
      for (const coordinator::MemberInfo& member : members_) {
        launcher::ReportMember entry;
        entry.node = member.node;
        entry.worker = member.role == coordinator::MemberRole::kWorker;
        if (fs::exists(ResultFile(member.node))) {
          entry.result = job::ReadMemberResult(ResultFile(member.node));
        }
        if (entry.worker) {
          entry.scalars =
              launcher::ReadNewScalars(BoardDir(member.node), earlier_events_[member.node]);
        }
        report.members.push_back(std::move(entry));
      }
      if (!merged_timeline_.empty() && fs::is_regular_file(merged_timeline_)) {
        launcher::AttachTimeline(report, merged_timeline_);
      }
      WriteFileBytes(path, launcher::RenderRunReport(report));
      out_ << "report: " << path << std::endl;
    } catch (const std::exception& error) {
      err_ << "autodist run: report: " << error.what() << std::endl;
    }
  }

  std::string TimelineFile(const std::string& node) const {
    return (fs::path(timeline_dir_) / (node + std::string(kTimelineSuffix))).string();
  }

  // The members' timelines as one trace, whether the job succeeded or not (a failure is when a
  // timeline helps most).
  void MergeTimeline() {
    if (merged_timeline_.empty()) return;
    std::vector<observe::TimelineSource> sources;
    for (const coordinator::MemberInfo& member : members_) {
      sources.push_back({member.node, TimelineFile(member.node)});
    }
    try {
      const int merged = observe::MergeTimelines(sources, merged_timeline_);
      out_ << fmt::format("timeline: {} ({} of {} members; open it in Perfetto)", merged_timeline_,
                          merged, members_.size())
           << std::endl;
    } catch (const std::exception& error) {
      err_ << "autodist run: timeline: " << error.what() << std::endl;
    }
  }

  std::string ResultFile(const std::string& node) const {
    return (fs::path(log_dir_) / (node + ".result.json")).string();
  }

  launcher::LineSink Echo() {
    if (!options_.verbose) return nullptr;
    return [this](std::string_view name, std::string_view line) {
      printer_.PrintLine(fmt::format("[{}] {}", name, line));
    };
  }

  // Where member `index` (in members_' order) serves /metrics; empty without --metrics-port.
  std::string MetricsAddress(size_t index) const {
    if (options_.metrics_port == 0) return "";
    return fmt::format("{}:{}",
                       network_ ? network_->Host(members_[index].node).address : "127.0.0.1",
                       options_.metrics_port + static_cast<int>(index));
  }

  void ShowMetricsAddresses() {
    if (options_.metrics_port == 0) return;
    const int last = options_.metrics_port + static_cast<int>(members_.size()) - 1;
    AD_CHECK(last <= 65535, kInvalidArgument,
             "--metrics-port {}: {} members need ports up to {}, past 65535", options_.metrics_port,
             members_.size(), last);
    std::string list;
    for (size_t i = 0; i < members_.size(); ++i) {
      list += fmt::format("{}{} http://{}/metrics", i == 0 ? "" : ", ", members_[i].node,
                          MetricsAddress(i));
    }
    out_ << "metrics: " << list << std::endl;
  }

  // The GPUs each GPU worker is given (CUDA_VISIBLE_DEVICES), or why none are.
  std::string WorkerGpus(const coordinator::MemberInfo& member) const {
    return launcher::WorkerVisibleDevices(member.rank, job_.resources.gpus_per_worker,
                                          visible_gpus_);
  }

  void ShowWorkerGpus() {
    if (job_.resources.gpus_per_worker == 0) return;
    if (visible_gpus_.empty()) {
      out_ << "gpus: this machine shows none (no NVIDIA driver, or CUDA_VISIBLE_DEVICES empty)"
           << std::endl;
      return;
    }
    std::string list;
    for (const coordinator::MemberInfo& member : members_) {
      if (member.role != coordinator::MemberRole::kWorker) continue;
      list += fmt::format("{}{} {}", list.empty() ? "" : ", ", member.node, WorkerGpus(member));
    }
    out_ << fmt::format("gpus (CUDA_VISIBLE_DEVICES): {}", list) << std::endl;
  }

  // The process of members_[index].
  launcher::ProcessSpec Spec(size_t index) const {
    const coordinator::MemberInfo& member = members_[index];
    const bool worker = member.role == coordinator::MemberRole::kWorker;
    const int threads = worker ? (options_.threads > 0
                                      ? options_.threads
                                      : DefaultThreads(CountRole(coordinator::MemberRole::kWorker)))
                               : 1;
    launcher::ProcessSpec spec;
    spec.name = member.node;
    spec.argv = {runtime_,
                 "--job",
                 fs::absolute(options_.manifest).string(),
                 "--node",
                 member.node,
                 "--coordinator",
                 coordinator_endpoint_,
                 "--result-file",
                 ResultFile(member.node),
                 "--threads",
                 std::to_string(threads),
                 "--heartbeat-timeout-ms",
                 std::to_string(options_.heartbeat_timeout.count())};
    // The manifest's NCCL settings, as the operator gives its pods; those it leaves unset stay
    // as the caller's environment has them.
    for (const auto& [name, value] : job::NcclEnvironment(job_.resources.nccl)) {
      spec.env[name] = value;
    }
    if (worker && job_.resources.gpus_per_worker > 0 && !visible_gpus_.empty()) {
      spec.env["CUDA_VISIBLE_DEVICES"] = WorkerGpus(member);
    }
    if (network_) {
      const netemu::EmulatedHost& host = network_->Host(member.node);
      spec.argv.emplace_back("--listen");
      spec.argv.push_back(host.address + ":0");
      spec.network_namespace = host.ns->fd();
      if (network_rate_) {
        spec.argv.emplace_back("--network-bandwidth-gbps");
        spec.argv.push_back(fmt::format("{}", static_cast<double>(*network_rate_) / 1e9));
      }
    }
    if (credentials_) {
      spec.argv.emplace_back("--tls-dir");
      spec.argv.push_back(credentials_->DirectoryOf(member.node));
    } else {
      spec.argv.emplace_back("--insecure");
    }
    if (!merged_timeline_.empty()) {
      spec.argv.emplace_back("--timeline");
      spec.argv.push_back(TimelineFile(member.node));
    }
    if (worker) {
      spec.argv.emplace_back("--tensorboard");
      spec.argv.push_back(board_dir_);
    }
    if (const std::string address = MetricsAddress(index); !address.empty()) {
      spec.argv.emplace_back("--metrics-bind-address");
      spec.argv.push_back(address);
    }
    return spec;
  }

  int Watch(ProcessGroup& group, const launcher::InterruptGuard& interrupt) {
    auto last_status = Clock::now() - kStatusInterval;
    const std::optional<int64_t> deadline = job_.run_policy.active_deadline_seconds;
    while (true) {
      if (const auto exit = group.WaitAny(kPollInterval)) {
        if (exit->failed()) return Fail(group, *exit);
        if (group.AllExited()) return Succeed();
      }
      if (interrupt.Requested()) return Interrupt(group, interrupt);
      const double elapsed = Seconds(Clock::now() - started_);
      if (deadline && elapsed > static_cast<double>(*deadline)) {
        return Stop(group, fmt::format("spec.runPolicy.activeDeadlineSeconds: the job ran longer "
                                       "than {} s and was stopped",
                                       *deadline));
      }
      if (Clock::now() - last_status >= kStatusInterval) {
        last_status = Clock::now();
        ShowProgress();
      }
    }
  }

  static double Seconds(Clock::duration duration) {
    return std::chrono::duration<double>(duration).count();
  }

  void ShowProgress() {
    coordinator::StatusSnapshot status;
    try {
      status = coordinator_->Status(std::chrono::milliseconds(300));
    } catch (const Error&) {
      return;  // the chief is not serving yet, or already gone: nothing new to show
    }
    const auto now = Clock::now();
    rate_.Record(now, status.step, status.samples);
    launcher::ProgressSnapshot snapshot;
    snapshot.step = status.step;
    snapshot.total_steps = status.total_steps;
    snapshot.loss = status.loss;
    snapshot.samples_per_second = rate_.SamplesPerSecond();
    snapshot.steps_per_second = rate_.StepsPerSecond();
    snapshot.elapsed_seconds = Seconds(now - started_);
    printer_.Update(snapshot, now);
  }

  // Tells the running members why the job stops (so their logs say it), then stops them all.
  std::vector<ProcessExit> StopAll(ProcessGroup& group, const std::string& reason) {
    try {
      coordinator_->Abort(reason);
    } catch (const Error&) {
      // The coordinator lives in the chief, which may be the process that died.
    }
    // Members hear of the abort at their next heartbeat (or from a connection that broke with
    // the failed member) and exit by themselves: give them that long before the signals.
    const auto until = Clock::now() + kAbortGrace;
    while (!group.AllExited() && Clock::now() < until) group.WaitAny(kPollInterval);
    return group.TerminateAll(options_.stop_grace);
  }

  int Fail(ProcessGroup& group, ProcessExit exit) {
    printer_.Finish();
    // A member that exits with kMemberStoppedByJobFailure was stopped because another one
    // failed; the one to report is the cause, which usually exits a moment later (the chief
    // stays until the others heard the reason).
    const auto until = Clock::now() + kCauseWait;
    while (exit.exit_code == kMemberStoppedByJobFailure && Clock::now() < until) {
      const auto next = group.WaitAny(kPollInterval);
      if (next && next->failed() && next->exit_code != kMemberStoppedByJobFailure) exit = *next;
      if (group.AllExited()) break;
    }
    outcome_ = "failed: " + launcher::DescribeExit(exit);
    StopAll(group, launcher::DescribeExit(exit));
    err_ << "autodist run: job " << job_.metadata.name << " failed: "
         << launcher::FailureReport(exit, group.LogPath(exit.name),
                                    group.LastLines(exit.name, kFailureLines))
         << "\nlogs: " << log_dir_ << std::endl;
    return kExitJobFailed;
  }

  int Stop(ProcessGroup& group, const std::string& reason) {
    printer_.Finish();
    outcome_ = "failed: " + reason;
    StopAll(group, reason);
    err_ << "autodist run: job " << job_.metadata.name << " failed: " << reason
         << "\nlogs: " << log_dir_ << std::endl;
    return kExitJobFailed;
  }

  int Interrupt(ProcessGroup& group, const launcher::InterruptGuard& interrupt) {
    printer_.Finish();
    err_ << "autodist run: interrupted; stopping every process" << std::endl;
    outcome_ = "interrupted";
    StopAll(group, "interrupted by the user");
    err_ << "autodist run: stopped; logs: " << log_dir_ << std::endl;
    return interrupt.ExitCode();
  }

  int Succeed() {
    printer_.Finish();
    outcome_ = "succeeded";
    std::vector<job::MemberResult> results;
    for (const coordinator::MemberInfo& member : members_) {
      results.push_back(job::ReadMemberResult(ResultFile(member.node)));
    }
    out_ << launcher::FormatRunSummary(job_.metadata.name, Seconds(Clock::now() - started_),
                                       results, log_dir_)
         << std::flush;
    return 0;
  }

  const RunOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  const job::JobSpec job_;
  launcher::ProgressPrinter printer_;
  launcher::RateMeter rate_;
  std::vector<coordinator::MemberInfo> members_;
  std::string timeline_dir_;     // the members' timeline files; empty: none recorded
  std::string merged_timeline_;  // their merge
  std::string board_dir_;        // the workers' TensorBoard event files, a directory each
  std::map<std::string, std::vector<std::string>> earlier_events_;  // by worker: older files
  std::string outcome_;  // for the report: "succeeded", "failed: ...", "interrupted"
  std::string runtime_;
  // The GPUs workers are dealt (resources.gpusPerWorker), as this process sees them.
  std::vector<std::string> visible_gpus_ =
      launcher::VisibleGpus(std::getenv("CUDA_VISIBLE_DEVICES"));
  std::string coordinator_endpoint_;
  std::string log_dir_;
  std::optional<RunCredentials> credentials_;  // removed when the run ends
  std::optional<int64_t> network_rate_;        // --network's rate; nullopt: unshaped
  // --network: the members' namespaces; outlives the process group, so that members being
  // stopped can still reach each other.
  std::unique_ptr<netemu::EmulatedNetwork> network_;
  std::optional<coordinator::CoordinatorClient> coordinator_;
  Clock::time_point started_;
};

}  // namespace

int RunJob(const RunOptions& options, std::ostream& out, std::ostream& err) {
  JobRun run(options, out, err);
  return run.Run();
}

}  // namespace autodist::cli
