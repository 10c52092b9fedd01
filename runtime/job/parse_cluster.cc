// metadata, spec.resources, spec.runPolicy and spec.template: what the cluster needs.
#include <array>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "runtime/job/k8s_syntax.h"
#include "runtime/job/nccl_settings.h"
#include "runtime/job/parse_sections.h"
#include "runtime/job/yaml_writer.h"

namespace autodist::job::detail {
namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
// 100 Tbit/s: far past any NIC, low enough that a unit mistake (bits for Gbit) is caught.
constexpr double kMaxBandwidthGbps = 100000;

// ObjectMeta fields the API server fills in: accepted so that objects read back from the cluster
// parse, otherwise ignored.
const std::vector<std::string>& IgnoredMetadataFields() {
  static const auto* fields = new std::vector<std::string>{"generateName",
                                                           "selfLink",
                                                           "creationTimestamp",
                                                           "deletionTimestamp",
                                                           "deletionGracePeriodSeconds",
                                                           "ownerReferences",
                                                           "finalizers",
                                                           "managedFields"};
  return *fields;
}

std::map<std::string, std::string> ReadLabelMap(ParseContext& context, const YAML::Node& node,
                                                const std::string& path, bool check_values) {
  std::map<std::string, std::string> out;
  const MapReader map(context, node, path);
  for (const MapReader::Entry& entry : map.entries()) {
    if (!IsQualifiedName(entry.key)) {
      context.Fail(entry.path,
                   "invalid key: expected an optional DNS subdomain prefix and '/', then a name of "
                   "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter "
                   "or digit");
    }
    std::string value = ReadString(context, entry.value, entry.path);
    if (check_values && !IsLabelValue(value)) {
      context.Fail(entry.path,
                   "expected a label value (empty, or at most 63 letters, digits, '-', '_' or '.', "
                   "starting and ending with a letter or digit), got \"{}\"",
                   value);
    }
    out[entry.key] = std::move(value);
  }
  return out;
}

// Fails when an alias makes a mapping or list contain itself (`template: &t {metadata: *t}`):
// the pod template is re-emitted as a tree, and a cycle would never end.
void CheckNoCycle(const ParseContext& context, const YAML::Node& node, const std::string& path,
                  std::vector<YAML::Node>& ancestors) {
  if (!node.IsMap() && !node.IsSequence()) return;
  for (const YAML::Node& ancestor : ancestors) {
    if (ancestor.is(node)) {
      context.Fail(path,
                   "expected a tree, got an alias to a mapping or list that contains it (YAML "
                   "anchors and aliases must not form a cycle)");
    }
  }
  ancestors.push_back(node);
  if (node.IsMap()) {
    for (const auto& entry : node) {
      CheckNoCycle(context, entry.first, path, ancestors);
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "?";
      CheckNoCycle(context, entry.second, JoinPath(path, key), ancestors);
    }
  } else {
    for (size_t i = 0; i < node.size(); ++i) {
      CheckNoCycle(context, node[i], IndexPath(path, i), ancestors);
    }
  }
  ancestors.pop_back();
}

std::string ReadQuantity(const ParseContext& context, const YAML::Node& node,
                         const std::string& path, const char* examples) {
  std::string text = ReadString(context, node, path);
  if (!IsResourceQuantity(text)) {
    context.Fail(path, "expected a non-negative Kubernetes quantity such as {}, got \"{}\"",
                 examples, text);
  }
  return text;
}

// One of `candidates` (by the manifest's spelling, case-sensitive as the CRD's enums are).
template <typename Enum, size_t N>
Enum ReadEnum(const ParseContext& context, const std::string& text, const std::string& path,
              const std::array<Enum, N>& candidates, const char* (*name_of)(Enum)) {
  std::string names;
  for (const Enum candidate : candidates) {
    if (text == name_of(candidate)) return candidate;
    names += names.empty() ? name_of(candidate) : std::string(", ") + name_of(candidate);
  }
  context.Fail(path, "expected one of: {}; got \"{}\"", names, text);
}

// A DNS-1123 subdomain, as Kubernetes requires of scheduler and priority class names.
std::string ReadSubdomain(const ParseContext& context, const YAML::Node& node,
                          const std::string& path, const char* what) {
  std::string text = ReadString(context, node, path);
  if (!IsDns1123Subdomain(text)) {
    context.Fail(path,
                 "expected a {} name (a DNS-1123 subdomain: lowercase letters, digits, '-' and "
                 "'.', at most 253 characters), got \"{}\"",
                 what, text);
  }
  return text;
}

SchedulingPolicy ReadSchedulingPolicy(ParseContext& context, const YAML::Node& node,
                                      const std::string& path) {
  const MapReader map(context, node, path,
                      {"schedulerName", "queue", "priorityClass", "scheduleTimeoutSeconds"});
  SchedulingPolicy policy;
  policy.scheduler_name = ReadSubdomain(context, map.Require("schedulerName"),
                                        map.PathOf("schedulerName"), "scheduler");
  if (const YAML::Node* queue = map.Find("queue")) {
    policy.queue = ReadNonEmptyString(context, *queue, map.PathOf("queue"));
  }
  if (const YAML::Node* priority = map.Find("priorityClass")) {
    policy.priority_class =
        ReadSubdomain(context, *priority, map.PathOf("priorityClass"), "PriorityClass");
  }
  if (const auto timeout = map.Int("scheduleTimeoutSeconds", 1, kMaxInt32)) {
    policy.schedule_timeout_seconds = static_cast<int32_t>(*timeout);
  }
  return policy;
}

NcclSpec ReadNccl(ParseContext& context, const YAML::Node& node, const std::string& path) {
  const MapReader map(context, node, path, {"socketIfname", "debug", "ibDisable"});
  NcclSpec nccl;
  if (const auto ifname = map.String("socketIfname")) {
    if (!IsNcclSocketIfname(*ifname)) {
      context.Fail(map.PathOf("socketIfname"), "expected {} (NCCL_SOCKET_IFNAME), got \"{}\"",
                   kNcclSocketIfnameExpected, *ifname);
    }
    nccl.socket_ifname = *ifname;
  }
  if (const auto debug = map.String("debug")) {
    if (!IsNcclDebugLevel(*debug)) {
      context.Fail(map.PathOf("debug"), "expected {} (NCCL_DEBUG), got \"{}\"", kNcclDebugExpected,
                   *debug);
    }
    nccl.debug = *debug;
  }
  nccl.ib_disable = map.Bool("ibDisable");
  return nccl;
}

}  // namespace

JobMetadata ReadMetadata(ParseContext& context, const YAML::Node& node, const std::string& path) {
  std::vector<std::string> known = {"name", "namespace",       "labels",    "annotations",
                                    "uid",  "resourceVersion", "generation"};
  known.insert(known.end(), IgnoredMetadataFields().begin(), IgnoredMetadataFields().end());
  const MapReader map(context, node, path, known);
  JobMetadata metadata;
  metadata.name = map.RequireString("name");
  if (!IsDns1035Label(metadata.name)) {
    context.Fail(
        map.PathOf("name"),
        "expected a DNS-1035 label (lowercase letters, digits and '-', at most 63 "
        "characters, starting with a letter and ending with a letter or digit), got \"{}\"",
        metadata.name);
  }
  if (const auto name_space = map.String("namespace")) {
    if (!IsDns1123Label(*name_space)) {
      context.Fail(map.PathOf("namespace"),
                   "expected a DNS-1123 label (lowercase letters, digits and '-', at most 63 "
                   "characters, starting and ending with a letter or digit), got \"{}\"",
                   *name_space);
    }
    metadata.namespace_name = *name_space;
  }
  if (const YAML::Node* labels = map.Find("labels")) {
    metadata.labels = ReadLabelMap(context, *labels, map.PathOf("labels"), true);
  }
  if (const YAML::Node* annotations = map.Find("annotations")) {
    metadata.annotations = ReadLabelMap(context, *annotations, map.PathOf("annotations"), false);
  }
  metadata.uid = map.String("uid").value_or("");
  metadata.resource_version = map.String("resourceVersion").value_or("");
  metadata.generation = map.Int("generation", 0, kMaxInt64);
  return metadata;
}

ResourcesSpec ReadResources(ParseContext& context, const YAML::Node& node,
                            const std::string& path) {
  const MapReader map(context, node, path,
                      {"workers", "gpusPerWorker", "replicasPerWorker", "parameterServers",
                       "networkBandwidthGbps", "cpu", "memory", "sharedMemory", "nccl"});
  ResourcesSpec resources;
  resources.workers = static_cast<int>(map.Int("workers", 1, kMaxInt32).value_or(1));
  resources.gpus_per_worker = static_cast<int>(map.Int("gpusPerWorker", 0, kMaxInt32).value_or(0));
  resources.replicas_per_worker =
      static_cast<int>(map.Int("replicasPerWorker", 1, kMaxInt32).value_or(1));
  resources.parameter_servers =
      static_cast<int>(map.Int("parameterServers", 0, kMaxInt32).value_or(0));
  if (resources.replicas_per_worker > 1 && resources.gpus_per_worker > 0) {
    context.Fail(map.PathOf("replicasPerWorker"),
                 "must be 1 when gpusPerWorker > 0 (each GPU is one replica), got {}",
                 resources.replicas_per_worker);
  }
  if (const YAML::Node* bandwidth = map.Find("networkBandwidthGbps")) {
    const double gbps = ReadNumber(context, *bandwidth, map.PathOf("networkBandwidthGbps"));
    if (!(gbps > 0 && gbps <= kMaxBandwidthGbps)) {
      context.Fail(map.PathOf("networkBandwidthGbps"),
                   "expected each node's link in Gbit/s, above 0 and at most {}, got {}",
                   kMaxBandwidthGbps, gbps);
    }
    resources.network_bandwidth_gbps = gbps;
  }
  if (const YAML::Node* cpu = map.Find("cpu")) {
    resources.cpu = ReadQuantity(context, *cpu, map.PathOf("cpu"), R"("500m", "2" or "1.5")");
  }
  if (const YAML::Node* memory = map.Find("memory")) {
    resources.memory =
        ReadQuantity(context, *memory, map.PathOf("memory"), R"("128Mi", "4Gi", "1e9" or "1G")");
  }
  if (const YAML::Node* shared = map.Find("sharedMemory")) {
    resources.shared_memory =
        ReadQuantity(context, *shared, map.PathOf("sharedMemory"), R"("1Gi" or "512Mi")");
    // A zero-sized /dev/shm would fail NCCL at its first collective, long after the pods start.
    if (std::strtod(resources.shared_memory.c_str(), nullptr) <= 0) {
      context.Fail(map.PathOf("sharedMemory"), "expected a size above 0, got \"{}\"",
                   resources.shared_memory);
    }
  }
  if (const YAML::Node* nccl = map.Find("nccl")) {
    resources.nccl = ReadNccl(context, *nccl, map.PathOf("nccl"));
  }
  return resources;
}

RunPolicy ReadRunPolicy(ParseContext& context, const YAML::Node& node, const std::string& path) {
  const MapReader map(context, node, path,
                      {"restartPolicy", "backoffLimit", "activeDeadlineSeconds",
                       "ttlSecondsAfterFinished", "cleanPodPolicy", "suspend", "schedulingPolicy"});
  RunPolicy policy;
  if (const auto restart = map.String("restartPolicy")) {
    policy.restart_policy = ReadEnum(
        context, *restart, map.PathOf("restartPolicy"),
        std::array{RestartPolicy::kNever, RestartPolicy::kOnFailure, RestartPolicy::kExitCode},
        RestartPolicyName);
  }
  if (const auto limit = map.Int("backoffLimit", 0, kMaxInt32)) {
    policy.backoff_limit = static_cast<int32_t>(*limit);
  }
  // Kubernetes and the training operator require a positive deadline.
  policy.active_deadline_seconds = map.Int("activeDeadlineSeconds", 1, kMaxInt64);
  if (const auto ttl = map.Int("ttlSecondsAfterFinished", 0, kMaxInt32)) {
    policy.ttl_seconds_after_finished = static_cast<int32_t>(*ttl);
  }
  if (const auto clean = map.String("cleanPodPolicy")) {
    policy.clean_pod_policy =
        ReadEnum(context, *clean, map.PathOf("cleanPodPolicy"),
                 std::array{CleanPodPolicy::kNone, CleanPodPolicy::kRunning, CleanPodPolicy::kAll},
                 CleanPodPolicyName);
  }
  policy.suspend = map.Bool("suspend").value_or(false);
  if (const YAML::Node* scheduling = map.Find("schedulingPolicy")) {
    policy.scheduling_policy =
        ReadSchedulingPolicy(context, *scheduling, map.PathOf("schedulingPolicy"));
  }
  return policy;
}

std::string ReadPodTemplate(ParseContext& context, const YAML::Node& node,
                            const std::string& path) {
  // A PodTemplateSpec: its contents are the operator's (and the API server's) to check.
  const MapReader map(context, node, path, {"metadata", "spec"});
  for (const MapReader::Entry& entry : map.entries()) {
    const MapReader section(context, entry.value, entry.path);  // fails unless a mapping
  }
  std::vector<YAML::Node> ancestors;
  CheckNoCycle(context, node, path, ancestors);
  YAML::Emitter out;
  EmitNode(out, node);
  return out.c_str();
}

}  // namespace autodist::job::detail
