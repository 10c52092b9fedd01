// The parts of a job's children that the controller and the reconciler read, for the informers'
// transforms (controller::ObjectTransform): the operator caches every pod, ConfigMap and Service
// it made for as long as they exist, and a full pod is mostly spec the reconcile never looks at.
// Kept here, beside the readers (observed_pods.cc, the controller's coordinator lookup), so a
// reader that starts to need a field adds it in the same module.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace autodist::reconcile {

// The most of a termination message's last line that is kept (and quoted in Events).
inline constexpr size_t kLastLineBytes = 512;

// The last non-blank line of `text`, trimmed, cut to kLastLineBytes (ending in "...").
std::string LastLine(const std::string& text);

// apiVersion, kind and the metadata the cache, the work queue and the reconciler use: name,
// namespace, uid, resourceVersion, generation, labels, ownerReferences, deletionTimestamp.
nlohmann::json SlimToMetadata(const nlohmann::json& object);

// SlimToMetadata plus status.phase, status.reason and, of the autodist-runtime container's
// status, its name, restartCount and state (each state's exitCode, reason and finishedAt, and
// the last line of a terminated state's message): what decides a member's phase and exit
// (observed_pods.h); and where scheduling stands: metadata.creationTimestamp,
// spec.schedulerName, spec.nodeName and the PodScheduled condition.
nlohmann::json SlimPod(const nlohmann::json& pod);

// The job as stored, less what only its clients read: metadata.managedFields and kubectl's
// last-applied-configuration annotation, which holds the whole manifest again as text (twice
// the spec of a job made with `kubectl apply`). Everything the reconciler reads stays.
nlohmann::json SlimJob(const nlohmann::json& job);

}  // namespace autodist::reconcile
