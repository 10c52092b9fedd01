#include "runtime/cli/job_member.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "runtime/cli/heartbeat.h"
#include "runtime/cli/trainer_options.h"
#include "runtime/cli/worker_collectives.h"
#include "runtime/collective/abort_list.h"
#include "runtime/collective/registry.h"
#include "runtime/common/error.h"
#include "runtime/coordinator/job.h"
#include "runtime/coordinator/rendezvous_store.h"
#include "runtime/coordinator/service.h"
#include "runtime/exec/device_backend.h"
#include "runtime/exec/trainer.h"
#include "runtime/graph/graph_item.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/job_views.h"
#include "runtime/job/member_exit.h"
#include "runtime/job/member_result.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/observe/timeline.h"
#include "runtime/observe/timeline_merge.h"
#include "runtime/ops/parallel.h"
#include "runtime/ps/service.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/security/job_credentials.h"
#include "runtime/security/process_credentials.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/summary.h"
#include "runtime/sync/strategy_synchronizer.h"
#include "runtime/sync/traced_communicator.h"

namespace autodist::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kShutdownGraceMs = 2000;

std::string PortOf(const std::string& endpoint, const std::string& what) {
  const size_t colon = endpoint.rfind(':');
  AD_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < endpoint.size(), kInvalidArgument,
           "{}: expected host:port, got '{}'", what, endpoint);
  return endpoint.substr(colon + 1);
}

std::string HostOf(const std::string& endpoint, const std::string& what) {
  PortOf(endpoint, what);
  return rpc::HostOfEndpoint(endpoint);
}

coordinator::MemberInfo FindSelf(const std::vector<coordinator::MemberInfo>& members,
                                 const std::string& node, const job::JobSpec& job) {
  std::vector<std::string> nodes;
  for (const coordinator::MemberInfo& member : members) {
    if (member.node == node) return member;
    nodes.push_back(member.node);
  }
  Fail(ErrorCode::kInvalidArgument, "--node '{}' is not a node of job '{}'; its nodes are: {}",
       node, job.metadata.name, coordinator::ListNodes(nodes));
}

// Ends the process when the heartbeat learns that the job failed: a training step blocked on a
// parameter server that waits for a dead peer cannot be unwound from this thread.
// `own_failure` is this member's own exit code once it has failed itself (0 before): the job's
// failure it then hears of is its own, and the launcher and the operator must see the cause's
// code, not "stopped because another member failed". `aborted`: how many communicators the
// heartbeat's handler aborted first (collective::AbortList), said so that a log shows it.
[[noreturn]] void AbortProcess(const std::string& node, const std::string& reason, bool job_failed,
                               int own_failure, size_t aborted) {
  // The timeline of a failed job is the one most worth reading: finish its file first.
  observe::FinishTimeline(observe::ActiveTimeline(), "autodist-runtime: " + node);
  std::fflush(stdout);
  if (own_failure != 0) {
    std::fprintf(stderr, "autodist-runtime: %s: stopping: %s%s\n", node.c_str(),
                 job_failed ? "the job failed: " : "", reason.c_str());
  } else {
    // Another member's failure (its node and error) or the lost coordinator: the cause, not
    // whatever this member was doing when it heard.
    std::fprintf(stderr, "autodist-runtime: %s: stopped: %s\n", node.c_str(), reason.c_str());
  }
  if (aborted > 0) {
    std::fprintf(stderr, "autodist-runtime: %s: aborted %zu collective communicator%s\n",
                 node.c_str(), aborted, aborted == 1 ? "" : "s");
  }
  std::fflush(stderr);
  std::_Exit(own_failure != 0 ? own_failure : job::kMemberExitJobFailed);
}

// --timeline's file, else <spec.training.timeline.path>/<node>.timeline.json (the directory made
// when missing), else none.
std::string TimelinePath(const MemberOptions& options, const job::JobSpec& job) {
  if (!options.timeline_path.empty() || job.training.timeline_path.empty()) {
    return options.timeline_path;
  }
  std::error_code error;
  std::filesystem::create_directories(job.training.timeline_path, error);
  AD_CHECK(!error, kInvalidArgument,
           "spec.training.timeline.path: directory '{}' cannot be created: {}",
           job.training.timeline_path, error.message());
  return (std::filesystem::path(job.training.timeline_path) /
          (options.node + std::string(observe::kTimelineSuffix)))
      .string();
}

std::vector<graph::Variable> ModelVariables(const job::JobSpec& job) {
  return graph::GraphItem::Load(job::RequireLocalModel(job)).TrainableVariables();
}

// The collectives of the job's workers (worker_collectives.h), meeting through the coordinator.
cli::WorkerCollectives ConnectCollectives(const sync::StrategyPlan& plan,
                                          const sync::StrategySynchronizerOptions& synchronizer,
                                          const coordinator::RegisterResult& registration,
                                          const MemberOptions& options, const std::string& node,
                                          const std::string& host,
                                          collective::AbortList& abort_list) {
  const auto make_store = [&options, node] {
    return coordinator::MakeCoordinatorRendezvous(
        std::make_shared<coordinator::CoordinatorClient>(options.coordinator), node);
  };
  cli::CollectivesSetup setup;
  setup.base.rank = registration.rank;
  setup.base.size = registration.world_size;
  setup.base.rendezvous = make_store();
  setup.base.prefix = "allreduce";
  setup.base.hostname = host;
  setup.base.connect_timeout = options.rendezvous_timeout;
  // A peer that dies mid-collective fails the others within the heartbeat deadline, the same
  // bound the coordinator gives a silent member.
  setup.base.timeout = std::max(options.heartbeat_timeout, std::chrono::milliseconds(5000));
  setup.make_store = make_store;
  setup.placement = synchronizer.placement;
  setup.devices = synchronizer.replica_devices;
  setup.abort_list = &abort_list;
  if (observe::ActiveTimeline() != nullptr) {
    setup.wrap = [](std::unique_ptr<collective::Communicator> communicator) {
      return std::unique_ptr<collective::Communicator>(
          std::make_unique<sync::TracedCommunicator>(std::move(communicator)));
    };
  }
  return cli::ConnectWorkerCollectives(
      plan, setup, [](const std::string& line) { std::cout << line << std::endl; });
}

// Makes the credentials of --tls-dir this process's (every server and channel of the member uses
// them), after checking they are this member's: a pod that mounted another member's directory
// would otherwise answer under the wrong name.
void UseMemberCredentials(const MemberOptions& options) {
  if (options.insecure) {
    AD_CHECK(options.tls_dir.empty(), kInvalidArgument,
             "--insecure and --tls-dir exclude each other");
    std::cerr << fmt::format(
                     "autodist-runtime: {}: warning: --insecure: this member serves and "
                     "connects in plaintext, and accepts any peer (docs/security.md)",
                     options.node)
              << std::endl;
    return;
  }
  AD_CHECK(!options.tls_dir.empty(), kInvalidArgument,
           "--job needs --tls-dir DIR, the member's credentials ({}, {} and {}; `autodist run` "
           "and the operator give them), or --insecure to run without authentication",
           security::kCaFile, security::kCertificateFile, security::kKeyFile);
  auto credentials =
      std::make_shared<const security::JobCredentials>(security::LoadCredentials(options.tls_dir));
  AD_CHECK(credentials->member == options.node, kInvalidArgument,
           "--tls-dir {}: the certificate is member '{}''s, but this is --node {}", options.tls_dir,
           credentials->member, options.node);
  security::SetProcessCredentials(std::move(credentials));
}

// Where a worker's replicas train: the CPU, or with resources.gpusPerWorker its GPUs, one
// replica each (replica r on the r-th GPU the pod, or `autodist run`, lets it see), checked to
// be here first (naming the field), never a silent CPU run. The all-reduce then runs on the GPUs
// over NCCL where it can (worker_collectives.h); otherwise gradients and variables go through
// host memory (exec/host_staged_synchronizer.h) to the Strategy's transport.
tensor::Device WorkerDevice(const job::JobSpec& job, const std::string& node) {
  const int gpus = job.resources.gpus_per_worker;
  if (gpus == 0) return tensor::Device::Cpu();
  const std::string found =
      exec::UseDevices(tensor::DeviceKind::kCuda, gpus, "resources.gpusPerWorker");
  std::cout << fmt::format(
                   "{} trains on {} ({})", node,
                   gpus == 1 ? std::string("cuda:0") : fmt::format("cuda:0 .. cuda:{}", gpus - 1),
                   found)
            << std::endl;
  return tensor::Device::Cuda(0);
}

// The reason the job failed, when another member's failure (reported to the coordinator) failed
// it: a member whose own error followed from it (a connection that broke as that member went)
// is then stopped by that failure rather than failing with its own. nullopt when the job has
// not failed, failed by this member, or the coordinator cannot say.
std::optional<std::string> FailureOfAnotherMember(coordinator::CoordinatorClient& coordinator,
                                                  const std::string& node) {
  try {
    const coordinator::StatusSnapshot status = coordinator.Status(std::chrono::milliseconds(1000));
    if (status.phase == coordinator::JobPhase::kFailed && !status.reason.starts_with(node + " ")) {
      return status.reason;
    }
  } catch (const Error&) {
    // The coordinator is gone or silent: this member's error is the one it knows.
  }
  return std::nullopt;
}

// Whose failure a member's error is, decided once: another member's (the job had already
// failed by its hand) or this member's own, which it then reports to the coordinator.
class FailureVerdict {
 public:
  FailureVerdict(coordinator::CoordinatorClient& coordinator, std::string node,
                 std::atomic<int>& own_failure)
      : coordinator_(coordinator), node_(std::move(node)), own_failure_(own_failure) {}

  void Decide(const Error& error) {
    if (decided_) return;
    decided_ = true;
    stopped_by_ = FailureOfAnotherMember(coordinator_, node_);
    if (stopped_by_.has_value()) return;
    // Before the coordinator hears of it: the abort that follows is this member's own failure.
    own_failure_ = error.IsUserError() ? job::kMemberExitBadInput : job::kMemberExitFailure;
    try {
      coordinator_.Finish(node_, true, error.what());
    } catch (const Error& unreachable) {
      // Unavailable: the coordinator (in the chief) is gone, so the job has ended and whoever
      // watches it reports the chief's exit; anything else is worth a line.
      if (unreachable.code() != ErrorCode::kUnavailable) {
        std::cerr << fmt::format("autodist-runtime: {}: could not report the failure: {}", node_,
                                 unreachable.what())
                  << std::endl;
      }
    }
  }

  const std::optional<std::string>& stopped_by() const { return stopped_by_; }

 private:
  coordinator::CoordinatorClient& coordinator_;
  const std::string node_;
  std::atomic<int>& own_failure_;
  bool decided_ = false;
  std::optional<std::string> stopped_by_;
};

// Trains this worker's replicas under the Strategy; fills the worker part of `result`.
void TrainWorker(const job::JobSpec& job, const tensor::Device& device,
                 const strategy::ResourceSpec& resources,
                 const coordinator::RegisterResult& registration, const MemberOptions& member,
                 const std::string& node, const std::string& host,
                 coordinator::CoordinatorClient& coordinator, FailureVerdict& verdict,
                 collective::AbortList& abort_list, job::MemberResult& result) {
  const sync::StrategyPlan plan =
      sync::PlanStrategy(registration.strategy, ModelVariables(job), resources);
  sync::StrategySynchronizerOptions options;
  options.node = node;
  options.worker_rank = registration.rank;
  options.num_workers = registration.world_size;
  options.placement = sync::PlaceReplicas(registration.strategy, node);
  for (const coordinator::MemberInfo& member_info : registration.members) {
    options.ps_endpoints[member_info.node] = member_info.endpoint;
  }
  options.optimizer = job.training.optimizer.name;
  options.optimizer_options = job.training.optimizer_options;
  options.parsed_optimizer = job.training.optimizer;
  options.sum_states = job::SumReducedStates(job);
  options.batch_size = job.data.batch_size_per_replica;
  exec::TrainerOptions trainer = cli::TrainerOptionsFromJob(job, options.placement.first_replica,
                                                            options.placement.local_replicas,
                                                            options.placement.total_replicas);
  trainer.device = device;
  for (int r = 0; r < trainer.local_replicas; ++r) {
    options.replica_devices.push_back(exec::ReplicaDevice(trainer, r));
  }
  // Each worker writes its own run: TensorBoard shows one run per subdirectory.
  const std::string tensorboard =
      member.tensorboard_dir.empty() ? job.training.tensorboard_path : member.tensorboard_dir;
  if (!tensorboard.empty()) {
    trainer.tensorboard_dir = (std::filesystem::path(tensorboard) / node).string();
  }
  const cli::WorkerCollectives collectives =
      ConnectCollectives(plan, options, registration, member, node, host, abort_list);
  sync::StrategySynchronizer synchronizer(plan, options, coordinator, collectives.workers.get(),
                                          collectives.replica_pointers());
  if (const size_t encoded = synchronizer.pushes_encoded_on_device().size(); encoded > 0) {
    std::cout << fmt::format(
                     "parameter servers: the pushes of {} variable{} are compressed on the {} "
                     "devices, before the copy to the host",
                     encoded, encoded == 1 ? "" : "s",
                     tensor::DeviceKindName(options.replica_devices.front().kind))
              << std::endl;
  }
  exec::TrainResult trained;
  try {
    trained = exec::Train(trainer, synchronizer,
                          [](const std::string& line) { std::cout << line << std::endl; });
  } catch (const Error& error) {
    // Decided (and reported) while this worker's connections are still open: they close as the
    // synchronizer and the communicator go with this scope, and a peer whose collective or push
    // then breaks finds this failure at the coordinator, instead of reporting its broken
    // connection as the job's failure.
    verdict.Decide(error);
    throw;
  }
  result.steps = trained.steps;
  result.seconds = trained.seconds;
  result.samples_per_second = trained.samples_per_second;
  result.last_loss = trained.last_loss;
  result.resumed_from_step = trained.resumed_from_step;
  if (trained.eval) {
    result.eval_loss = trained.eval->loss;
    result.accuracy = trained.eval->accuracy;
  }
  const sync::SynchronizerTraffic traffic = synchronizer.Traffic();
  if (plan.has_all_reduce()) {
    result.all_reduce =
        job::AllReduceTraffic{traffic.all_reduce.raw_bytes, traffic.all_reduce.wire_bytes};
  }
}

}  // namespace

job::JobSpec LoadMemberJob(const MemberOptions& options) {
  job::JobSpec job = job::LoadJobFile(options.job_file);
  if (options.resume) {
    AD_CHECK(job.training.checkpoint.has_value(), kInvalidArgument,
             "--resume: {} has no spec.training.checkpoint to resume from", options.job_file);
    job.training.checkpoint->resume = true;
  }
  // The network this run is on, for Auto's cost model; what the manifest states comes first.
  if (options.network_bandwidth_gbps.has_value() && !job.resources.network_bandwidth_gbps) {
    job.resources.network_bandwidth_gbps = options.network_bandwidth_gbps;
  }
  return job;
}

int RunMember(const MemberOptions& options) {
  if (options.threads > 0) ops::SetNumThreads(options.threads);
  UseMemberCredentials(options);
  const job::JobSpec job = LoadMemberJob(options);
  const strategy::ResourceSpec resources =
      strategy::ResourceSpec::FromReplicaCounts(job::ToReplicaCounts(job));
  const coordinator::MemberInfo self =
      FindSelf(coordinator::ExpectedMembers(resources), options.node, job);
  const bool worker = self.role == coordinator::MemberRole::kWorker;
  const bool chief = worker && self.rank == 0;
  const tensor::Device device = worker ? WorkerDevice(job, options.node) : tensor::Device::Cpu();
  const std::string job_id = options.job_id.empty() ? job.metadata.name : options.job_id;
  observe::SetMemberInfo(job_id, options.node, coordinator::MemberRoleName(self.role));
  // Before the services: the timeline outlives every thread that records into it.
  const std::unique_ptr<observe::Timeline> timeline =
      observe::StartTimeline(TimelinePath(options, job), options.node);

  ps::ParameterServerService parameter_server{ps::ParameterServerOptions{}};
  std::vector<grpc::Service*> services{&parameter_server};
  std::unique_ptr<coordinator::CoordinatorService> coordinator_service;
  std::string listen = options.listen;
  std::string strategy_summary;
  if (chief) {
    // The chief compiles the Strategy once and hands it to everyone at the rendezvous.
    const std::vector<graph::Variable> variables = ModelVariables(job);
    const strategy::CompileResult compiled = strategy::Compile(
        variables, resources, job::ToCompileRequest(job, job::ReadLocalProfile(job, variables)));
    std::cout << fmt::format("compiled strategy {} ({})", compiled.builder, compiled.strategy.id())
              << std::endl;
    if (!compiled.reason.empty()) std::cout << compiled.reason << std::endl;
    strategy_summary =
        fmt::format("strategy {}\n", compiled.strategy.id()) +
        strategy::FormatSummary(strategy::Summarize(compiled.strategy, variables, resources),
                                compiled.builder) +
        (compiled.note.empty() ? "" : compiled.note + "\n");
    coordinator::CoordinatorOptions coordinator_options;
    coordinator_options.heartbeat_deadline = options.heartbeat_timeout;
    coordinator_options.rendezvous_deadline = options.rendezvous_timeout;
    coordinator_service = std::make_unique<coordinator::CoordinatorService>(
        resources, compiled.strategy, job_id, coordinator_options);
    services.push_back(coordinator_service.get());
    listen = fmt::format("{}:{}", HostOf(options.listen, "--listen"),
                         PortOf(options.coordinator, "--coordinator"));
  }
  rpc::RpcServer server(listen, services);
  // Beside the gRPC port, on the same host; the DataChannel RPC tells clients its port.
  if (options.ps_data_channel) parameter_server.ServeDataChannel(HostOf(listen, "--listen"));
  coordinator::MemberInfo me = self;
  me.endpoint = options.advertise_host.empty()
                    ? server.endpoint()
                    : fmt::format("{}:{}", options.advertise_host, server.port());
  me.pid = ::getpid();
  coordinator::CoordinatorClient coordinator(options.coordinator);
  const coordinator::RegisterResult registration =
      coordinator.Register(me, job_id, options.rendezvous_timeout);
  std::cout << fmt::format("{} registered as {} rank {} of job '{}' ({} workers)", me.node,
                           coordinator::MemberRoleName(me.role), registration.rank, job_id,
                           registration.world_size)
            << std::endl;

  const std::string node = me.node;
  // Heartbeats have their own client with a short call deadline: a heartbeat that cannot get
  // through must fail fast so the next one (or the end of the process) is not held up.
  coordinator::CoordinatorClientOptions heartbeat_calls;
  heartbeat_calls.call_timeout =
      std::min(options.heartbeat_timeout,
               std::max(options.heartbeat_interval * 2, std::chrono::milliseconds(500)));
  coordinator::CoordinatorClient heartbeat_client(options.coordinator, heartbeat_calls);
  std::atomic<int> own_failure{0};
  // Outlives the heartbeat, whose handler aborts the collectives before the process ends: a
  // collective waiting for a dead peer on a GPU is only ended by NCCL's abort.
  collective::AbortList collectives;
  Heartbeat heartbeat(
      heartbeat_client, node,
      HeartbeatOptions{options.heartbeat_interval, options.heartbeat_timeout},
      [node, &own_failure, &collectives](const std::string& reason, bool job_failed) {
        const size_t aborted = collectives.AbortAll(reason);
        AbortProcess(node, reason, job_failed, own_failure.load(), aborted);
      });
  FailureVerdict verdict(coordinator, node, own_failure);
  job::MemberResult result;
  result.node = node;
  result.role = coordinator::MemberRoleName(me.role);
  result.rank = registration.rank;
  result.strategy_summary = strategy_summary;
  try {
    if (worker) {
      TrainWorker(job, device, resources, registration, options, node,
                  HostOf(me.endpoint, "endpoint"), coordinator, verdict, collectives, result);
      coordinator.Finish(node, false, "");
    }
    // Parameter servers (dedicated, or hosted by a worker) serve until every worker is done.
    heartbeat.WaitWorkersFinished();
    const ps::PsStats stats = parameter_server.CurrentStats();
    if (stats.updates > 0 || stats.bytes_pulled > 0) {
      result.parameter_server =
          job::ParameterServerTraffic{stats.bytes_pushed, stats.bytes_pulled, stats.updates};
    }
    if (!worker) coordinator.Finish(node, false, "");
    if (!options.result_file.empty()) job::WriteMemberResult(options.result_file, result);
    if (coordinator_service) coordinator_service->WaitSettled(options.heartbeat_timeout);
    // Let replies in flight (the last Finish, a heartbeat) reach their callers before the
    // server goes: cancelling them would turn a finished job into a failed member.
    server.Shutdown(kShutdownGraceMs);
  } catch (const Error& error) {
    verdict.Decide(error);
    // The chief hosts the coordinator: stay until the others have heard why the job failed.
    if (coordinator_service) coordinator_service->WaitSettled(options.heartbeat_timeout);
    // Calls still blocked (a push waiting for a dead worker) end now instead of holding up the
    // server's shutdown.
    parameter_server.Shutdown();
    if (coordinator_service) coordinator_service->Shutdown();
    server.Shutdown(kShutdownGraceMs);
    if (const std::optional<std::string>& cause = verdict.stopped_by()) {
      observe::FinishTimeline(timeline.get(), "autodist-runtime: " + node);
      std::cout << std::flush;
      std::cerr << fmt::format("autodist-runtime: {}: stopped: {} (here: {})", node, *cause,
                               error.what())
                << std::endl;
      return job::kMemberExitJobFailed;
    }
    throw;
  }
  observe::FinishTimeline(timeline.get(), "autodist-runtime: " + node);
  return job::kMemberExitOk;
}

}  // namespace autodist::cli
