// What the operator's flags decide about the objects the reconciler builds: the runtime image,
// how the members of a job address each other, gang scheduling and where things are mounted.
// docs/operator-reconcile.md describes every option; the controller parses its flags into these
// once, and the reconcile functions never read flags or the environment themselves.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "runtime/job/nccl_settings.h"

namespace autodist::reconcile {

// Where a member listens and how the others reach it.
struct AddressPolicy {
  enum class Ports {
    kFixed,      // every member on `port` (each pod has its own IP address)
    kPerMember,  // member i on base + i, so that members sharing one host do not collide
  };

  // Host at which the others reach a member; "{pod}", "{service}", "{namespace}" and "{job}" are
  // replaced. The default is the DNS name the headless Service gives each pod.
  std::string host_template = "{pod}.{service}.{namespace}.svc";
  std::string listen_host = "0.0.0.0";
  Ports ports = Ports::kFixed;
  int port = 29500;
  // kPerMember: base = port_range_begin + slot * port_slot_size, where the slot is a hash of the
  // job's namespace and name (deterministic, so every reconcile derives the same ports); member i
  // (workers first, then parameter servers) listens on base + i. The range ends below Linux's
  // ephemeral ports (32768 and up by default), which outgoing connections of the same host take
  // and which would otherwise sometimes hold a member's port.
  int port_range_begin = 20000;
  int port_range_end = 32768;  // exclusive
  int port_slot_size = 64;     // the most members a job may have

  // Pods on a cluster: DNS names through the headless Service, one fixed port.
  static AddressPolicy Cluster();
  // Every pod a local process on 127.0.0.1 (the end-to-end tests' node agent): distinct ports.
  static AddressPolicy LocalProcesses();
};

// Who schedules a job's pods as a gang (the chart's gangScheduling.provider).
enum class GangScheduler { kNone, kSchedulerPlugins, kVolcano };

// "none", "scheduler-plugins", "volcano" (the operator's --gang-scheduling values).
GangScheduler ParseGangScheduler(const std::string& name);
const char* GangSchedulerName(GangScheduler scheduler);

// The NetworkPolicy each job gets (network_policy.h).
struct NetworkPolicyOptions {
  bool enabled = true;  // --network-policy
  // Where the operator's pods run and their labels (the chart's selector labels): the peer
  // allowed to reach the coordinator. An empty namespace means any namespace.
  std::string operator_namespace;  // --network-policy-operator-namespace
  std::map<std::string, std::string> operator_labels{
      {"app.kubernetes.io/name", "autodist-operator"}};  // --network-policy-operator-labels
  // The scraper allowed to reach the metrics port; both empty: none.
  std::map<std::string, std::string> scraper_namespace_labels;  // ...-scraper-namespace-labels
  std::map<std::string, std::string> scraper_pod_labels;        // ...-scraper-pod-labels
};

// Each job's own CA and its members' certificates (tls_secret.h): every connection of the job's
// pods is mutual TLS, and the operator reads progress with a certificate of the job's.
struct JobTlsOptions {
  bool enabled = true;  // --job-tls; off: the runtime pods run --insecure (docs/security.md)
  // Each pod's credentials are mounted at <mount_path>/<member> (--tls-mount-path).
  std::string mount_path = "/etc/autodist-tls";
  // How long a job's certificates are valid (--job-certificate-lifetime-days). A job running
  // longer cannot open new connections past it; deleting the Secret and restarting the job
  // issues new ones.
  std::chrono::hours lifetime{24 * 365};
};

struct ReconcilerOptions {
  std::string runtime_image = "autodist/autodist-runtime:0.1.0";  // --runtime-image
  std::string runtime_image_pull_policy = "IfNotPresent";         // --runtime-image-pull-policy
  // The image of GPU workers' pods (resources.gpusPerWorker > 0): the same binaries built with
  // CUDA (docker/runtime-cuda.Dockerfile). Parameter servers and CPU jobs keep runtime_image.
  std::string runtime_gpu_image = "autodist/autodist-runtime-cuda:0.1.0";  // --runtime-gpu-image
  AddressPolicy addresses = AddressPolicy::Cluster();
  GangScheduler gang_scheduler = GangScheduler::kNone;  // --gang-scheduling
  // The job's ConfigMap (manifest, Strategy, cluster spec) is mounted here in every pod.
  std::string config_mount_path = "/etc/autodist";
  // A model from spec.model.configMap is mounted here; the pods' manifest points at it.
  std::string model_mount_path = "/etc/autodist-model";
  // The runtime container's working directory (the runtime image's WORKDIR); relative paths of
  // the manifest are resolved against it. Empty: no workingDir, relative paths kept as written.
  std::string working_dir = "/workspace";
  // Writable scratch directories of the runtime container, whose root filesystem is read-only:
  // an emptyDir each (pod_volumes.h), /dev/shm's in memory. Empty: none.
  std::string tmp_mount_path = "/tmp";
  std::string shm_mount_path = "/dev/shm";
  // NCCL's settings in every runtime pod where the manifest's spec.resources.nccl leaves them
  // unset (--nccl-socket-ifname, --nccl-debug, --nccl-ib-disable). The defaults work on a plain
  // TCP cluster: the pod's one interface, warnings only, no InfiniBand.
  job::NcclSpec nccl{"eth0", "WARN", true};
  // Every runtime container serves Prometheus /metrics on this port (named "metrics" in the pod
  // spec); 0 turns it off. Pods that share a host (AddressPolicy::kPerMember) serve none: one
  // fixed port would collide.
  int runtime_metrics_port = 9400;  // --runtime-metrics-port
  // Adds prometheus.io/scrape, /port and /path annotations to the pods, for a Prometheus that
  // discovers targets by annotation (the chart's runtimeMetrics.scrapeAnnotations).
  bool runtime_scrape_annotations = false;  // --runtime-scrape-annotations
  // How long to wait before looking for a missing model ConfigMap again.
  std::chrono::seconds model_retry_interval{30};
  // A pod not scheduled this long after its creation sets Running False, Unschedulable, with
  // the scheduler's reason (or the scheduler that never acted on it). --scheduling-timeout
  std::chrono::milliseconds scheduling_timeout{std::chrono::minutes(5)};
  NetworkPolicyOptions network_policy;
  JobTlsOptions tls;
};

// The port the runtime serves /metrics on in the pods, or 0 when it serves none (turned off, or
// pods sharing a host).
int RuntimeMetricsPort(const ReconcilerOptions& options);

// Throws InvalidArgument naming the option when the options cannot work (an empty image, a port
// range smaller than one slot, ...).
void ValidateOptions(const ReconcilerOptions& options);

}  // namespace autodist::reconcile
