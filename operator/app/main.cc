// autodist-operator: runs AutoDistJobs on a Kubernetes cluster (docs/operator.md).
//
//   autodist-operator [--namespaces a,b] [--workers 4] [--leader-elect=true] ...
//
// Startup: flags → API client (kubeconfig or in-cluster) → metrics/health endpoints → leader
// election (when asked) → the AutoDistJob controller. SIGTERM or SIGINT stops it gracefully: the
// workers finish the reconcile they are in, the lease is released, exit 0. Losing the lease
// exits 1 at once, so the Deployment restarts a replica that can no longer be sure it leads.
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <utility>
// clang-format off
// After <utility>: Boost 1.74's asio, under pplx, uses std::exchange without including it.
#include <pplx/threadpool.h>
// clang-format on

#include "operator/app/job_controller.h"
#include "operator/app/log.h"
#include "operator/app/operator_options.h"
#include "operator/controller/leader_election.h"
#include "operator/controller/operator_metrics.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "runtime/common/error.h"
#include "runtime/observe/metrics.h"
#include "runtime/observe/operability_server.h"

namespace autodist::app {
namespace {

// This replica's identity in the Lease: the pod name plus a random suffix, so a restarted
// container never mistakes itself for its predecessor.
std::string Identity() {
  const char* pod = std::getenv("POD_NAME");
  std::string base = pod != nullptr && *pod != '\0' ? pod : "autodist-operator";
  std::random_device random;
  return base + "_" + std::to_string(random() % 1000000);
}

int Run(const OperatorOptions& options, const sigset_t& signals) {
  ConfigureLogging(options.log_format, options.log_level);
  observe::Registry registry;
  controller::OperatorMetrics metrics(registry);
  kube::ClientOptions client_options;
  client_options.observer = metrics.ClientObserver();
  kube::Client client(kube::LoadDefaultConfig(options.kubeconfig, options.context), client_options);
  Log(spdlog::level::info, "starting",
      {{"server", client.config().server},
       {"namespaces",
        options.namespaces.empty() ? nlohmann::json("*") : nlohmann::json(options.namespaces)},
       {"workers", options.workers},
       {"leaderElect", options.leader_elect}});

  JobController jobs(client, options, metrics);
  std::unique_ptr<observe::OperabilityServer> server;
  std::unique_ptr<controller::LeaderElector> elector;
  if (options.metrics_bind_address != "0") {
    server = std::make_unique<observe::OperabilityServer>(
        observe::ParseBindAddress(options.metrics_bind_address), registry);
    server->AddHealthCheck("ping", [] { return true; });
    // A standby replica is ready too: it serves metrics and waits for the lease.
    server->AddReadyCheck(
        "caches", [&] { return jobs.Synced() || (elector != nullptr && !elector->IsLeader()); });
    server->Start();
    Log(spdlog::level::info, "serving /metrics, /healthz and /readyz", {{"url", server->url()}});
  }

  std::atomic<bool> lost_lease{false};
  if (options.leader_elect) {
    controller::LeaderElectionConfig config;
    config.lease_namespace = options.leader_election_namespace;
    config.lease_name = options.leader_election_id;
    config.identity = Identity();
    config.lease_duration = options.lease_duration;
    config.renew_deadline = options.renew_deadline;
    config.retry_period = options.retry_period;
    controller::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [&] {
      Log(spdlog::level::info, "leading", {{"identity", config.identity}});
      metrics.leader.With().Set(1);
      jobs.Start();
    };
    callbacks.on_stopped_leading = [&] {
      metrics.leader.With().Set(0);
      lost_lease = true;
      kill(getpid(), SIGTERM);  // wakes the sigwait below
    };
    callbacks.on_new_leader = [](const std::string& leader) {
      Log(spdlog::level::info, "leader observed", {{"identity", leader}});
    };
    elector = std::make_unique<controller::LeaderElector>(client, config, callbacks);
    elector->Start();
  } else {
    metrics.leader.With().Set(1);
    jobs.Start();
  }

  int signal = 0;
  sigwait(&signals, &signal);
  if (lost_lease) {
    Log(spdlog::level::err, "lost the leader lease; exiting");
    std::_Exit(1);  // no graceful stop: another replica may already be reconciling
  }
  Log(spdlog::level::info, "stopping", {{"signal", signal}});
  jobs.Stop();
  if (elector) elector->Stop();  // releases the lease for the next replica
  if (server) server->Stop();
  Log(spdlog::level::info, "stopped");
  return 0;
}

}  // namespace
}  // namespace autodist::app

int main(int argc, char** argv) {
  // Blocked before any thread starts, so every thread inherits the mask and only sigwait sees
  // the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // A compile allocates and frees a few MB (the model read, parsed and re-serialized). glibc's
  // defaults hand such blocks back to the kernel at once (mmap, trimming each thread's arena),
  // so every compile page-faulted them in again: ~500 page faults and a third of the operator's
  // CPU per job (docs/performance.md, "Operator at scale"). Keeping up to 32 MB free per arena,
  // with 2 arenas instead of 8 per core, costs no memory at 1,000 jobs. Before any thread starts.
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 8 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);

  CLI::App app("autodist-operator: runs AutoDistJobs on Kubernetes");
  autodist::app::OperatorOptions options;
  autodist::app::AddOperatorFlags(app, options);
  try {
    app.parse(argc, argv);
    autodist::app::FinishOperatorOptions(options);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const autodist::Error& e) {
    std::cerr << "autodist-operator: error: " << e.what() << "\n";
    return 2;
  }
  // cpprestsdk runs every HTTP completion (responses, watch streams, the metrics endpoint) on one
  // shared pool, 40 threads unless told otherwise. Nothing the operator runs there blocks
  // (requests block their caller, a worker; watch bodies are read by continuations), so a few
  // threads carry it all, and each thread more costs context switches: 40 threads ~850 per job,
  // 8 ~290, 2 ~120 (docs/performance.md, "Operator at scale"). Before any cpprestsdk use.
  crossplat::threadpool::initialize_with_threads(static_cast<size_t>(options.http_threads));
  try {
    return autodist::app::Run(options, signals);
  } catch (const autodist::Error& e) {
    std::cerr << "autodist-operator: error: " << e.what() << "\n";
    return e.code() == autodist::ErrorCode::kInvalidArgument ? 2 : 1;
  }
}
