#include "operator/reconcile/options.h"

#include "runtime/common/error.h"

namespace autodist::reconcile {

AddressPolicy AddressPolicy::Cluster() { return AddressPolicy{}; }

AddressPolicy AddressPolicy::LocalProcesses() {
  AddressPolicy policy;
  policy.host_template = "127.0.0.1";
  policy.listen_host = "127.0.0.1";
  policy.ports = Ports::kPerMember;
  return policy;
}

GangScheduler ParseGangScheduler(const std::string& name) {
  for (const GangScheduler scheduler :
       {GangScheduler::kNone, GangScheduler::kSchedulerPlugins, GangScheduler::kVolcano}) {
    if (name == GangSchedulerName(scheduler)) return scheduler;
  }
  Fail(ErrorCode::kInvalidArgument,
       "--gang-scheduling: expected one of: none, scheduler-plugins, volcano; got '{}'", name);
}

const char* GangSchedulerName(GangScheduler scheduler) {
  switch (scheduler) {
    case GangScheduler::kNone:
      return "none";
    case GangScheduler::kSchedulerPlugins:
      return "scheduler-plugins";
    case GangScheduler::kVolcano:
      return "volcano";
  }
  return "unknown";
}

int RuntimeMetricsPort(const ReconcilerOptions& options) {
  return options.addresses.ports == AddressPolicy::Ports::kFixed ? options.runtime_metrics_port : 0;
}

void ValidateOptions(const ReconcilerOptions& options) {
  AD_CHECK(!options.runtime_image.empty(), kInvalidArgument, "runtime image: must not be empty");
  AD_CHECK(!options.runtime_gpu_image.empty(), kInvalidArgument,
           "--runtime-gpu-image: must not be empty");
  AD_CHECK(job::IsNcclSocketIfname(options.nccl.socket_ifname), kInvalidArgument,
           "--nccl-socket-ifname: expected {}, got '{}'", job::kNcclSocketIfnameExpected,
           options.nccl.socket_ifname);
  AD_CHECK(job::IsNcclDebugLevel(options.nccl.debug), kInvalidArgument,
           "--nccl-debug: expected {}, got '{}'", job::kNcclDebugExpected, options.nccl.debug);
  AD_CHECK(options.nccl.ib_disable.has_value(), kInvalidArgument,
           "--nccl-ib-disable: expected true or false");
  const AddressPolicy& addresses = options.addresses;
  AD_CHECK(!addresses.host_template.empty(), kInvalidArgument,
           "address policy: the host template must not be empty");
  const auto valid_port = [](int port) { return port >= 1 && port <= 65535; };
  if (addresses.ports == AddressPolicy::Ports::kFixed) {
    AD_CHECK(valid_port(addresses.port), kInvalidArgument,
             "address policy: port must be in [1, 65535], got {}", addresses.port);
  } else {
    AD_CHECK(addresses.port_slot_size >= 1, kInvalidArgument,
             "address policy: the port slot size must be >= 1, got {}", addresses.port_slot_size);
    AD_CHECK(valid_port(addresses.port_range_begin) && valid_port(addresses.port_range_end - 1) &&
                 addresses.port_range_end - addresses.port_range_begin >= addresses.port_slot_size,
             kInvalidArgument,
             "address policy: the port range [{}, {}) must lie in [1, 65536) and hold at least one "
             "slot of {} ports",
             addresses.port_range_begin, addresses.port_range_end, addresses.port_slot_size);
  }
  AD_CHECK(options.runtime_metrics_port >= 0 && options.runtime_metrics_port <= 65535,
           kInvalidArgument,
           "runtime metrics port: expected 0 (off) or a port in [1, 65535], got {}",
           options.runtime_metrics_port);
  AD_CHECK(options.addresses.ports != AddressPolicy::Ports::kFixed ||
               options.runtime_metrics_port != options.addresses.port,
           kInvalidArgument,
           "runtime metrics port: {} is the members' own port; choose another one",
           options.runtime_metrics_port);
  AD_CHECK(!options.tls.enabled ||
               (!options.tls.mount_path.empty() && options.tls.mount_path.front() == '/'),
           kInvalidArgument, "--tls-mount-path: expected an absolute path, got '{}'",
           options.tls.mount_path);
  AD_CHECK(options.tls.lifetime.count() > 0, kInvalidArgument,
           "--job-certificate-lifetime-days: expected at least 1 day");
  AD_CHECK(!options.config_mount_path.empty() && options.config_mount_path.front() == '/',
           kInvalidArgument, "config mount path: expected an absolute path, got '{}'",
           options.config_mount_path);
  AD_CHECK(!options.model_mount_path.empty() && options.model_mount_path.front() == '/',
           kInvalidArgument, "model mount path: expected an absolute path, got '{}'",
           options.model_mount_path);
  AD_CHECK(options.working_dir.empty() || options.working_dir.front() == '/', kInvalidArgument,
           "working directory: expected an absolute path or nothing, got '{}'",
           options.working_dir);
  for (const auto& [what, path] :
       {std::pair<const char*, const std::string&>{"tmp mount path", options.tmp_mount_path},
        {"shm mount path", options.shm_mount_path}}) {
    AD_CHECK(path.empty() || path.front() == '/', kInvalidArgument,
             "{}: expected an absolute path or nothing, got '{}'", what, path);
  }
  AD_CHECK(options.model_retry_interval.count() > 0, kInvalidArgument,
           "model retry interval: must be positive");
}

}  // namespace autodist::reconcile
