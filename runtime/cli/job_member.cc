#include "runtime/cli/job_member.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "runtime/cli/heartbeat.h"
#include "runtime/comm/coordinator_job.h"
#include "runtime/comm/coordinator_service.h"
#include "runtime/comm/ps_service.h"
#include "runtime/comm/rpc.h"
#include "runtime/common/error.h"
#include "runtime/exec/job_options.h"
#include "runtime/exec/trainer.h"
#include "runtime/graph/graph_item.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/job_views.h"
#include "runtime/job/member_result.h"
#include "runtime/kernel/ps_synchronizer.h"
#include "runtime/ops/parallel.h"
#include "runtime/strategy/compiler.h"

namespace autodist::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string PortOf(const std::string& endpoint, const std::string& what) {
  const size_t colon = endpoint.rfind(':');
  AD_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < endpoint.size(), kInvalidArgument,
           "{}: expected host:port, got '{}'", what, endpoint);
  return endpoint.substr(colon + 1);
}

std::string HostOf(const std::string& endpoint, const std::string& what) {
  PortOf(endpoint, what);
  return endpoint.substr(0, endpoint.rfind(':'));
}

comm::MemberInfo FindSelf(const std::vector<comm::MemberInfo>& members, const std::string& node,
                          const job::JobSpec& job) {
  std::vector<std::string> nodes;
  for (const comm::MemberInfo& member : members) {
    if (member.node == node) return member;
    nodes.push_back(member.node);
  }
  Fail(ErrorCode::kInvalidArgument, "--node '{}' is not a node of job '{}'; its nodes are: {}",
       node, job.metadata.name, comm::ListNodes(nodes));
}

// Ends the process when the heartbeat learns that the job failed: a training step blocked on a
// parameter server that waits for a dead peer cannot be unwound from this thread.
[[noreturn]] void AbortProcess(const std::string& node, const std::string& reason) {
  std::fflush(stdout);
  std::fprintf(stderr, "autodist-runtime: %s: stopping: %s\n", node.c_str(), reason.c_str());
  std::fflush(stderr);
  std::_Exit(kMemberExitJobFailed);
}

std::vector<graph::Variable> ModelVariables(const job::JobSpec& job) {
  return graph::GraphItem::Load(job::RequireLocalModel(job)).TrainableVariables();
}

// Trains this worker's replicas under the Strategy; fills the worker part of `result`.
void TrainWorker(const job::JobSpec& job, const strategy::ResourceSpec& resources,
                 const comm::RegisterResult& registration, const std::string& node,
                 comm::CoordinatorClient& coordinator, job::MemberResult& result) {
  const kernel::StrategyPlan plan =
      kernel::PlanStrategy(registration.strategy, ModelVariables(job), resources);
  kernel::PsSynchronizerOptions options;
  options.node = node;
  options.worker_rank = registration.rank;
  options.num_workers = registration.world_size;
  options.placement = kernel::PlaceReplicas(registration.strategy, node);
  for (const comm::MemberInfo& member : registration.members) {
    options.ps_endpoints[member.node] = member.endpoint;
  }
  options.optimizer = job.training.optimizer.name;
  options.optimizer_options = job.training.optimizer_options;
  options.sum_states = job::SumReducedStates(job);
  options.batch_size = job.data.batch_size_per_replica;
  const exec::TrainerOptions trainer = exec::TrainerOptionsFromJob(
      job, options.placement.first_replica, options.placement.local_replicas,
      options.placement.total_replicas);
  kernel::PsSynchronizer synchronizer(plan, options, coordinator);
  const exec::TrainResult trained = exec::Train(
      trainer, synchronizer, [](const std::string& line) { std::cout << line << std::endl; });
  result.steps = trained.steps;
  result.seconds = trained.seconds;
  result.samples_per_second = trained.samples_per_second;
  result.last_loss = trained.last_loss;
  result.resumed_from_step = trained.resumed_from_step;
  if (trained.eval) {
    result.eval_loss = trained.eval->loss;
    result.accuracy = trained.eval->accuracy;
  }
}

}  // namespace

void RunMember(const MemberOptions& options) {
  if (options.threads > 0) ops::SetNumThreads(options.threads);
  const job::JobSpec job = job::LoadJobFile(options.job_file);
  const strategy::ResourceSpec resources =
      strategy::ResourceSpec::FromReplicaCounts(job::ToReplicaCounts(job));
  const comm::MemberInfo self = FindSelf(comm::ExpectedMembers(resources), options.node, job);
  const bool worker = self.role == comm::MemberRole::kWorker;
  const bool chief = worker && self.rank == 0;
  const std::string job_id = options.job_id.empty() ? job.metadata.name : options.job_id;

  comm::ParameterServerService parameter_server{comm::ParameterServerOptions{}};
  std::vector<grpc::Service*> services{&parameter_server};
  std::unique_ptr<comm::CoordinatorService> coordinator_service;
  std::string listen = options.listen;
  if (chief) {
    // The chief compiles the Strategy once and hands it to everyone at the rendezvous.
    const strategy::CompileResult compiled =
        strategy::Compile(ModelVariables(job), resources, job::ToCompileRequest(job));
    std::cout << fmt::format("compiled strategy {} ({})", compiled.builder, compiled.strategy.id())
              << std::endl;
    comm::CoordinatorOptions coordinator_options;
    coordinator_options.heartbeat_deadline = options.heartbeat_timeout;
    coordinator_options.rendezvous_deadline = options.rendezvous_timeout;
    coordinator_service = std::make_unique<comm::CoordinatorService>(resources, compiled.strategy,
                                                                     job_id, coordinator_options);
    services.push_back(coordinator_service.get());
    listen = fmt::format("{}:{}", HostOf(options.listen, "--listen"),
                         PortOf(options.coordinator, "--coordinator"));
  }
  comm::RpcServer server(listen, services);
  comm::MemberInfo me = self;
  me.endpoint = options.advertise_host.empty()
                    ? server.endpoint()
                    : fmt::format("{}:{}", options.advertise_host, server.port());
  me.pid = ::getpid();
  comm::CoordinatorClient coordinator(options.coordinator);
  const comm::RegisterResult registration =
      coordinator.Register(me, job_id, options.rendezvous_timeout);
  std::cout << fmt::format("{} registered as {} rank {} of job '{}' ({} workers)", me.node,
                           comm::MemberRoleName(me.role), registration.rank, job_id,
                           registration.world_size)
            << std::endl;

  const std::string node = me.node;
  // Heartbeats have their own client with a short call deadline: a heartbeat that cannot get
  // through must fail fast so the next one (or the end of the process) is not held up.
  comm::CoordinatorClientOptions heartbeat_calls;
  heartbeat_calls.call_timeout =
      std::min(options.heartbeat_timeout,
               std::max(options.heartbeat_interval * 2, std::chrono::milliseconds(500)));
  comm::CoordinatorClient heartbeat_client(options.coordinator, heartbeat_calls);
  Heartbeat heartbeat(heartbeat_client, node,
                      HeartbeatOptions{options.heartbeat_interval, options.heartbeat_timeout},
                      [node](const std::string& reason) { AbortProcess(node, reason); });
  job::MemberResult result;
  result.node = node;
  result.role = comm::MemberRoleName(me.role);
  result.rank = registration.rank;
  try {
    if (worker) {
      TrainWorker(job, resources, registration, node, coordinator, result);
      coordinator.Finish(node, false, "");
    }
    // Parameter servers (dedicated, or hosted by a worker) serve until every worker is done.
    heartbeat.WaitWorkersFinished();
    const comm::PsStats stats = parameter_server.CurrentStats();
    if (stats.updates > 0 || stats.bytes_pulled > 0) {
      result.parameter_server =
          job::ParameterServerTraffic{stats.bytes_pushed, stats.bytes_pulled, stats.updates};
    }
    if (!worker) coordinator.Finish(node, false, "");
    if (!options.result_file.empty()) job::WriteMemberResult(options.result_file, result);
    if (coordinator_service) coordinator_service->WaitSettled(options.heartbeat_timeout);
  } catch (const Error& error) {
    try {
      coordinator.Finish(node, true, error.what());
    } catch (const Error& unreachable) {
      std::cerr << fmt::format("autodist-runtime: {}: could not report the failure: {}", node,
                               unreachable.what())
                << std::endl;
    }
    // The chief hosts the coordinator: stay until the others have heard why the job failed.
    if (coordinator_service) coordinator_service->WaitSettled(options.heartbeat_timeout);
    throw;
  }
}

}  // namespace autodist::cli
