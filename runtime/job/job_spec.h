// The AutoDistJob manifest (autodist.io/v1alpha1) as one typed value, shared by the launcher
// (`autodist run`), the operator and the runtime. job_parser.h reads and validates it from YAML;
// docs/job-reference.md documents every field. Paths in a parsed JobSpec are already resolved
// against the manifest's directory.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/job/nccl_settings.h"
#include "runtime/ops/precision.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer_options.h"
#include "runtime/strategy/builder.h"
#include "runtime/strategy/builder_options.h"

namespace autodist::job {

inline constexpr char kApiVersion[] = "autodist.io/v1alpha1";
inline constexpr char kKind[] = "AutoDistJob";

// Key/value pairs in manifest order (the order of graph inputs and labels as written).
using StringPairs = std::vector<std::pair<std::string, std::string>>;

struct JobMetadata {
  std::string name;            // DNS-1035 label: the operator derives pod and service names from it
  std::string namespace_name;  // metadata.namespace; empty: the one kubectl or the caller applies
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  // Set by the API server; kept so that the operator can reference the object it parsed.
  std::string uid;
  std::string resource_version;
  std::optional<int64_t> generation;

  bool operator==(const JobMetadata&) const = default;
};

struct ConfigMapRef {
  std::string name;  // a DNS-1123 subdomain
  std::string key = "model.onnx";

  bool operator==(const ConfigMapRef&) const = default;
};

struct ModelSpec {
  // Exactly one of path (a local ONNX file) and config_map (for the cluster) is set.
  std::string path;
  std::optional<ConfigMapRef> config_map;
  std::string loss;               // loss output; empty: the runtime finds it
  std::string logits = "logits";  // output compared with `labels` for accuracy
  std::string labels = "label";   // graph input holding class indices

  bool operator==(const ModelSpec&) const = default;
};

enum class DataFormat { kFashionMnist, kFiles };

struct DataSpec {
  DataFormat format = DataFormat::kFashionMnist;
  std::string dir;  // fashion-mnist: where the data set's files are
  // files: graph input -> array file (IDX or NPY), for training and (optionally) evaluation.
  StringPairs train;
  StringPairs eval;
  int64_t batch_size_per_replica = 0;
  int64_t eval_batch_size = 1000;
  bool shuffle = true;
  uint64_t seed = 0;

  bool operator==(const DataSpec&) const = default;
};

struct CheckpointSpec {
  std::string path;            // directory of the checkpoints
  int64_t interval_steps = 0;  // 0: only at the end of training
  bool resume = true;          // continue from the latest checkpoint in `path` when there is one
  int keep = 3;                // the newest checkpoints kept, older ones deleted; 0: keep all

  bool operator==(const CheckpointSpec&) const = default;
};

struct TrainingSpec {
  int64_t epochs = 0;  // exactly one of epochs and steps is > 0
  int64_t steps = 0;
  // The parsed, validated options, and the options as written (key -> value text; the optimizer's
  // `name` is only in `optimizer.name`), which JobToYaml writes back.
  optim::OptimizerOptions optimizer;
  std::map<std::string, std::string> optimizer_options;
  optim::ScheduleOptions lr_schedule;
  std::map<std::string, std::string> lr_schedule_options;
  std::optional<CheckpointSpec> checkpoint;
  int64_t eval_interval_steps = 0;  // 0: at the end of every epoch
  int64_t log_interval_steps = 100;
  std::string export_path;  // empty: no export
  // Initializers in a data file beside the exported model (ONNX external data) even below the
  // size (1 GiB of initializers) at which that happens anyway.
  bool export_external_data = false;
  // Of matrix products and convolutions: fp32, or tf32 on GPUs (ops/precision.h).
  ops::Precision precision = ops::Precision::kFp32;
  // TensorBoard event files go under this directory, one subdirectory per worker (its node name);
  // empty: none are written.
  std::string tensorboard_path;
  // Every member records its timeline (runtime/observe/timeline.h) into
  // <path>/<node>.timeline.json; empty: none is recorded.
  std::string timeline_path;

  bool operator==(const TrainingSpec& other) const;
};

// How replica-local state (e.g. BatchNorm running statistics) is combined across replicas when a
// checkpoint or an export is written.
enum class StateReduction { kMean, kSum };

// Where Auto's step profile (`autodist profile`, strategy/step_profile.h) is: a file, or a
// ConfigMap key in a cluster.
struct ProfileSpec {
  std::string path;
  std::optional<ConfigMapRef> config_map;  // key default "profile.json"

  bool operator==(const ProfileSpec&) const = default;
};

struct StrategySpec {
  std::string builder = "Auto";  // one of strategy::BuilderNames()
  strategy::BuilderOptions options;
  strategy::ColocationGroups colocation;
  std::map<std::string, StateReduction> state_reduction;  // variable -> reduction (default Mean)
  // Auto may choose lossy gradient compressors (float16, PowerSGD, TopK); they change the
  // training's numbers, so only when the user says so.
  bool allow_lossy_compression = false;
  std::optional<ProfileSpec> profile;  // none: Auto estimates the step from the variables

  bool operator==(const StrategySpec&) const = default;
};

struct ResourcesSpec {
  int workers = 1;
  int gpus_per_worker = 0;
  int replicas_per_worker = 1;  // CPU replicas per worker; > 1 only when gpus_per_worker == 0
  int parameter_servers = 0;    // 0: the workers host the parameter servers
  // Each node's link, for Auto's cost model (AutoDist's network_bandwidth); none: its default.
  std::optional<double> network_bandwidth_gbps;
  std::string cpu;  // Kubernetes quantities; empty: no request
  std::string memory;
  // The size limit of every pod's in-memory /dev/shm (NCCL's shared-memory transport between
  // the GPUs of a pod), a Kubernetes quantity; empty: no limit of its own.
  std::string shared_memory;
  // NCCL's settings in the pods (unset: the operator's). `autodist run` does not set them: its
  // processes inherit the caller's environment, NCCL_* included.
  NcclSpec nccl;

  bool operator==(const ResourcesSpec&) const = default;
};

// Kubeflow training operator's CleanPodPolicy: which pods are deleted when the job finishes.
enum class CleanPodPolicy { kNone, kRunning, kAll };

// What a failed PS or worker pod leads to (Kubeflow's replica RestartPolicy). The operator
// restarts jobs as a gang: a retryable failure of any pod restarts all of the job's pods.
//   kNever:     every failure fails the job.
//   kOnFailure: every failure is retried (PyTorchJob's default, and ours).
//   kExitCode:  exit codes 1-127 fail the job, 128-255 (signals, OOM kills) are retried.
enum class RestartPolicy { kNever, kOnFailure, kExitCode };

// Gang scheduling (Kubeflow's SchedulingPolicy, with the scheduler named here): the operator gives
// the job a PodGroup whose minMember is all of its pods and schedules them with scheduler_name.
struct SchedulingPolicy {
  std::string scheduler_name;  // a DNS-1123 subdomain, e.g. "scheduler-plugins-scheduler"
  std::string queue;           // empty: the scheduler's default queue (Volcano)
  std::string priority_class;  // empty: none; a DNS-1123 subdomain
  std::optional<int32_t> schedule_timeout_seconds;

  bool operator==(const SchedulingPolicy&) const = default;
};

// Kubeflow training operator's RunPolicy; an unset value means "no limit".
struct RunPolicy {
  RestartPolicy restart_policy = RestartPolicy::kOnFailure;
  std::optional<int32_t> backoff_limit;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> ttl_seconds_after_finished;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kNone;
  bool suspend = false;
  std::optional<SchedulingPolicy> scheduling_policy;  // unset: no gang scheduling

  bool operator==(const RunPolicy&) const = default;
};

struct JobSpec {
  JobMetadata metadata;
  ModelSpec model;
  DataSpec data;
  TrainingSpec training;
  StrategySpec strategy;
  ResourcesSpec resources;
  RunPolicy run_policy;
  // Pod template (metadata and/or spec) as YAML text, kept for the operator; empty: none.
  std::string pod_template;
  // Absolute directory that relative paths were resolved against; empty: they were kept relative.
  std::string manifest_dir;

  bool operator==(const JobSpec&) const = default;
};

// Names as the manifest spells them ("fashion-mnist", "Sum", "Running", "ExitCode").
const char* DataFormatName(DataFormat format);
const char* StateReductionName(StateReduction reduction);
const char* CleanPodPolicyName(CleanPodPolicy policy);
const char* RestartPolicyName(RestartPolicy policy);

}  // namespace autodist::job
