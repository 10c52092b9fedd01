// Injecting the runtime into a user's pod template (spec.template.spec) as a sidecar: the user's
// containers, init containers, volumes, node selector, tolerations, affinity and everything else
// are kept as written; the runtime container joins them and shares their volumes.
#pragma once

#include <nlohmann/json.hpp>

namespace autodist::reconcile {

// Returns `pod_spec` (a PodSpec; null or an object) with
//  * `runtime` (a Container) added to `containers`; when the template already has a container of
//    that name, the template's one is the base: its image and pull policy (when set), env,
//    mounts, ports and resources stay, ours are merged in (ours win for the same name or key),
//    and command and args are ours;
//  * the volume mounts of the user's containers added to the runtime container at the same paths
//    (a data volume the user's container reads is where the runtime reads it too);
//  * `volumes` (the operator's) added to `volumes`, replacing user volumes of the same name.
nlohmann::json InjectRuntime(nlohmann::json pod_spec, const nlohmann::json& runtime,
                             const nlohmann::json& volumes);

}  // namespace autodist::reconcile
