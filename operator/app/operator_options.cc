#include "operator/app/operator_options.h"

#include <cctype>
#include <cstdlib>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::app {
namespace {

void AddDuration(CLI::App& app, const std::string& name, std::chrono::milliseconds& target,
                 const std::string& help) {
  app.add_option_function<std::string>(
      "--" + name, [name, &target](const std::string& text) { target = ParseDuration(name, text); },
      help);
}

void AddLabels(CLI::App& app, const std::string& name, std::map<std::string, std::string>& target,
               const std::string& help) {
  app.add_option_function<std::string>(
      "--" + name, [name, &target](const std::string& text) { target = ParseLabels(name, text); },
      help);
}

}  // namespace

std::map<std::string, std::string> ParseLabels(const std::string& flag, const std::string& text) {
  std::map<std::string, std::string> labels;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string pair = text.substr(start, end - start);
    const size_t equals = pair.find('=');
    AD_CHECK(equals != std::string::npos && equals > 0 && equals + 1 < pair.size(),
             kInvalidArgument, "--{}: expected key=value[,key=value...], got \"{}\"", flag, text);
    labels[pair.substr(0, equals)] = pair.substr(equals + 1);
    start = end + 1;
  }
  return labels;
}

std::chrono::milliseconds ParseDuration(const std::string& flag, const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) != 0)) {
    ++digits;
  }
  const std::string unit = text.substr(digits);
  AD_CHECK(
      digits > 0 && digits <= 9 && (unit.empty() || unit == "s" || unit == "ms" || unit == "m"),
      kInvalidArgument, "--{}: expected a duration such as 15s, 500ms or 2m, got \"{}\"", flag,
      text);
  const int64_t value = std::stoll(text.substr(0, digits));
  if (unit == "ms") return std::chrono::milliseconds(value);
  if (unit == "m") return std::chrono::minutes(value);
  return std::chrono::seconds(value);
}

void AddOperatorFlags(CLI::App& app, OperatorOptions& options) {
  app.add_option_function<std::string>(
      "--namespaces",
      [&options](const std::string& list) {
        options.namespaces.clear();
        std::string name;
        for (const char c : list + ",") {
          if (c != ',') {
            name += c;
          } else if (!name.empty()) {
            options.namespaces.push_back(std::exchange(name, {}));
          }
        }
      },
      "Comma-separated namespaces to watch (default: every namespace)");
  app.add_option("--workers", options.workers, "Concurrent reconciles")->check(CLI::Range(1, 256));
  app.add_option("--http-threads", options.http_threads,
                 "Threads that run HTTP completions and watch streams")
      ->check(CLI::Range(1, 64));
  app.add_option("--log-level", options.log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app.add_option("--log-format", options.log_format, "json or text")
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("--kubeconfig", options.kubeconfig,
                 "Kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  app.add_option("--context", options.context, "Kubeconfig context (default: current)");
  app.add_option("--leader-elect", options.leader_elect,
                 "Elect one active replica through a coordination.k8s.io Lease");
  app.add_option("--leader-election-id", options.leader_election_id, "Name of the Lease");
  app.add_option("--leader-election-namespace", options.leader_election_namespace,
                 "Namespace of the Lease (default: $POD_NAMESPACE)");
  AddDuration(app, "lease-duration", options.lease_duration, "How long a lease holds (e.g. 15s)");
  AddDuration(app, "renew-deadline", options.renew_deadline,
              "A leader that could not renew for this long steps down (e.g. 10s)");
  AddDuration(app, "retry-period", options.retry_period, "Between lease attempts (e.g. 2s)");
  app.add_option("--metrics-bind-address", options.metrics_bind_address,
                 "Address of /metrics, /healthz and /readyz (e.g. :8080; 0 turns it off)");
  AddDuration(app, "scheduling-timeout", options.reconciler.scheduling_timeout,
              "A job's pod not scheduled this long sets Running False, Unschedulable (e.g. 5m)");
  AddDuration(app, "progress-interval", options.progress_interval,
              "How often a running job's progress is read from its coordinator (e.g. 5s)");
  app.add_option("--runtime-image", options.reconciler.runtime_image,
                 "Image of the autodist-runtime container");
  app.add_option("--runtime-image-pull-policy", options.reconciler.runtime_image_pull_policy,
                 "Always, IfNotPresent or Never")
      ->check(CLI::IsMember({"Always", "IfNotPresent", "Never"}));
  app.add_option("--runtime-gpu-image", options.reconciler.runtime_gpu_image,
                 "Image of the autodist-runtime container in GPU workers' pods (built with CUDA)");
  job::NcclSpec& nccl = options.reconciler.nccl;
  app.add_option("--nccl-socket-ifname", nccl.socket_ifname,
                 "NCCL_SOCKET_IFNAME of the runtime pods where the manifest sets none");
  app.add_option("--nccl-debug", nccl.debug,
                 "NCCL_DEBUG (VERSION, WARN, INFO or TRACE) where the manifest sets none");
  app.add_option_function<bool>(
      "--nccl-ib-disable", [&nccl](bool disable) { nccl.ib_disable = disable; },
      "NCCL_IB_DISABLE where the manifest sets none (true: sockets only)");
  app.add_option_function<std::string>(
      "--gang-scheduling",
      [&options](const std::string& name) {
        options.reconciler.gang_scheduler = reconcile::ParseGangScheduler(name);
      },
      "none, scheduler-plugins or volcano");
  app.add_option("--address-mode", options.address_mode,
                 "cluster (pods reach each other through the headless Service) or "
                 "local-processes (every pod a process on 127.0.0.1, own port per member)")
      ->check(CLI::IsMember({"cluster", "local-processes"}));
  app.add_option("--config-mount-path", options.reconciler.config_mount_path,
                 "Where pods mount the job's ConfigMap; {namespace} and {job} are replaced");
  app.add_option("--model-mount-path", options.reconciler.model_mount_path,
                 "Where pods mount a model ConfigMap; {namespace} and {job} are replaced");
  app.add_option("--working-dir", options.reconciler.working_dir,
                 "The runtime container's working directory (relative manifest paths)");
  app.add_option("--runtime-metrics-port", options.reconciler.runtime_metrics_port,
                 "Port of the runtime pods' Prometheus /metrics (0 turns it off)");
  app.add_option("--runtime-scrape-annotations", options.reconciler.runtime_scrape_annotations,
                 "Annotate runtime pods with prometheus.io/scrape, port and path");
  reconcile::JobTlsOptions& tls = options.reconciler.tls;
  app.add_option("--job-tls", tls.enabled,
                 "Give every job its own CA and its members certificates (Secret <job>-tls): all "
                 "of a job's traffic is mutual TLS (false: plaintext, unauthenticated)");
  app.add_option("--tls-mount-path", tls.mount_path,
                 "Where pods mount their member's credentials, in a directory per member");
  app.add_option_function<int64_t>(
         "--job-certificate-lifetime-days",
         [&tls](int64_t days) { tls.lifetime = std::chrono::hours(24 * days); },
         "How long the certificates of a new job are valid (default 365)")
      ->check(CLI::Range(int64_t{1}, int64_t{3650}));
  reconcile::NetworkPolicyOptions& policy = options.reconciler.network_policy;
  app.add_option("--network-policy", policy.enabled,
                 "Give every job a NetworkPolicy admitting only its pods, the operator and the "
                 "metrics scraper (false where no policy controller runs)");
  app.add_option("--network-policy-operator-namespace", policy.operator_namespace,
                 "The operator's namespace, admitted to the coordinator (default: $POD_NAMESPACE)");
  AddLabels(app, "network-policy-operator-labels", policy.operator_labels,
            "Labels of the operator's pods, admitted to the coordinator (k=v,k=v)");
  AddLabels(app, "network-policy-scraper-namespace-labels", policy.scraper_namespace_labels,
            "Labels of the namespace whose scraper may reach the runtime's metrics port");
  AddLabels(app, "network-policy-scraper-pod-labels", policy.scraper_pod_labels,
            "Labels of the pods that may reach the runtime's metrics port");
}

void FinishOperatorOptions(OperatorOptions& options) {
  AD_CHECK(options.renew_deadline < options.lease_duration, kInvalidArgument,
           "--renew-deadline ({} ms) must be shorter than --lease-duration ({} ms)",
           options.renew_deadline.count(), options.lease_duration.count());
  options.reconciler.addresses = options.address_mode == "local-processes"
                                     ? reconcile::AddressPolicy::LocalProcesses()
                                     : reconcile::AddressPolicy::Cluster();
  const char* pod_namespace = std::getenv("POD_NAMESPACE");
  const bool in_namespace = pod_namespace != nullptr && *pod_namespace != '\0';
  if (options.leader_election_namespace.empty()) {
    options.leader_election_namespace = in_namespace ? pod_namespace : "default";
  }
  // Outside a pod (no $POD_NAMESPACE) the operator's pods may be in any namespace.
  if (options.reconciler.network_policy.operator_namespace.empty() && in_namespace) {
    options.reconciler.network_policy.operator_namespace = pod_namespace;
  }
  reconcile::ValidateOptions(options.reconciler);
}

}  // namespace autodist::app
