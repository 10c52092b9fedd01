// The operator's command line (the Helm chart's Deployment passes these flags) parsed into one
// value: what to watch, how many workers, logging, leader election, the metrics endpoint, and
// the reconciler's options (runtime image, addressing, gang scheduling, mounts).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "operator/reconcile/options.h"

namespace autodist::app {

struct OperatorOptions {
  std::vector<std::string> namespaces;  // empty: every namespace
  int workers = 4;
  int http_threads = 2;             // cpprestsdk's pool: HTTP completions and watch streams
  std::string log_level = "info";   // trace, debug, info, warn, error
  std::string log_format = "json";  // json or text
  std::string kubeconfig;           // empty: $KUBECONFIG, in-cluster, ~/.kube/config
  std::string context;
  bool leader_elect = false;
  std::string leader_election_id = "autodist-operator";
  std::string leader_election_namespace;  // empty: $POD_NAMESPACE, else "default"
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  std::string metrics_bind_address = ":8080";  // "0" turns the endpoint off
  // How often a running job's progress is read from its coordinator.
  std::chrono::milliseconds progress_interval{std::chrono::seconds(5)};
  // "cluster" (DNS names through the headless Service, one port) or "local-processes" (every
  // pod a process on 127.0.0.1 with its own port: the end-to-end tests' node agent).
  std::string address_mode = "cluster";
  // A job is reconciled this long after the first event of its children (pods, Service,
  // ConfigMap), and later events within it join that reconcile: the ten objects one reconcile
  // creates come back as one reconcile, not two or three. The cost is as much delay in reacting
  // to a pod's change; the job's own changes are reconciled at once. No flag: tests set it.
  std::chrono::milliseconds child_event_batch{100};
  reconcile::ReconcilerOptions reconciler;
};

// Registers every flag on `app`, writing into `options`.
void AddOperatorFlags(CLI::App& app, OperatorOptions& options);

// Applies what the flags imply after parsing (the address policy) and validates the whole.
// Throws InvalidArgument naming the flag.
void FinishOperatorOptions(OperatorOptions& options);

// "15s", "500ms", "2m", or a bare number of seconds. Throws InvalidArgument naming `flag`.
std::chrono::milliseconds ParseDuration(const std::string& flag, const std::string& text);

// "k=v,k2=v2" -> labels; throws InvalidArgument naming --`flag` for anything else.
std::map<std::string, std::string> ParseLabels(const std::string& flag, const std::string& text);

}  // namespace autodist::app
