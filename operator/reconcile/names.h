// The deterministic names and labels of a job's children. Every name derives from the job's name
// (and a pod's from its restart generation) alone, so any reconcile (after an operator restart
// too) finds what an earlier one created instead of creating it twice.
#pragma once

#include <string>

namespace autodist::reconcile {

// Labels on every child; the Service selects pods by the job-name label.
inline constexpr char kJobNameLabel[] = "autodist.io/job-name";
inline constexpr char kReplicaTypeLabel[] = "autodist.io/replica-type";    // worker | ps
inline constexpr char kReplicaIndexLabel[] = "autodist.io/replica-index";  // 0, 1, ...
// The gang restart a pod belongs to (status.restartCount when it was created).
inline constexpr char kRestartGenerationLabel[] = "autodist.io/restart-generation";
inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";
inline constexpr char kManagedByValue[] = "autodist-operator";

inline constexpr char kJobApiVersion[] = "autodist.io/v1alpha1";
inline constexpr char kJobKind[] = "AutoDistJob";

// The container the operator runs in every pod (injected as a sidecar into a pod template).
inline constexpr char kRuntimeContainer[] = "autodist-runtime";
// The user the runtime image runs as (docker/runtime.Dockerfile's USER), set on the pods.
inline constexpr int kRuntimeUser = 65532;
inline constexpr char kConfigVolume[] = "autodist-config";
inline constexpr char kModelVolume[] = "autodist-model";
inline constexpr char kPortName[] = "autodist";
inline constexpr char kMetricsPortName[] = "metrics";  // the runtime's Prometheus /metrics

// Keys of the job's ConfigMap.
inline constexpr char kManifestKey[] = "job.yaml";
inline constexpr char kStrategyKey[] = "strategy.pbtxt";
inline constexpr char kResourceSpecKey[] = "resource_spec.yml";
inline constexpr char kSummaryKey[] = "summary.txt";
inline constexpr char kProfileKey[] = "profile.json";  // Auto's step profile, when the job has one

enum class Role { kWorker, kParameterServer };

// "worker" / "ps": the replica-type label and the runtime's node names.
const char* RoleLabel(Role role);
// "Worker" / "PS": the keys of status.replicaStatuses.
const char* RoleStatusKey(Role role);

std::string ConfigMapName(const std::string& job);      // <job>-autodist
std::string ServiceName(const std::string& job);        // <job>
std::string NetworkPolicyName(const std::string& job);  // <job>
std::string TlsSecretName(const std::string& job);      // <job>-tls
std::string PodGroupName(const std::string& job);       // <job>
std::string NodeName(Role role, int index);  // worker-<i> | ps-<i> (the runtime's --node)
// <job>-worker-<i>; from the first gang restart on, <job>-worker-<i>-r<generation>. Each gang's
// pods have names (and so hostnames and DNS names) of their own: a new gang starts while the
// last one's pods are still Terminating, which they may stay for their grace period, or for
// good on a node that is gone, and a member of the old gang never reaches one of the new.
std::string PodName(const std::string& job, Role role, int index, int generation = 0);

}  // namespace autodist::reconcile
