// What the node agent runs for a pod: the container it picks, the argv, the environment, the
// working directory and the volumes to put on the host, derived from the pod's JSON the way the
// kubelet derives them (envFrom, then env in order with $(VAR) references, command/args
// expansion, the downward API for fieldRef, ConfigMaps and Secrets for configMapKeyRef and
// secretKeyRef).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/k8s/volumes.h"

namespace autodist::k8s {

// resource ("configmaps" or "secrets"), namespace, name -> the stored object, or null when there
// is none.
using ObjectLookup = std::function<nlohmann::json(const std::string& resource,
                                                  const std::string& ns, const std::string& name)>;

// What the pod cannot say for itself: the node's name and address, images' entrypoints.
struct LaunchContext {
  std::string node_name = "fake-node";
  std::string pod_ip = "127.0.0.1";  // every pod of the node agent shares the host's loopback
  // image (repository without tag or digest) -> entrypoint argv, used when a container has no
  // `command`, standing in for the image's ENTRYPOINT (which the double cannot read).
  std::map<std::string, std::vector<std::string>> image_entrypoints;
  // Appended to every container's environment before the pod's own `env` (which wins).
  std::vector<std::pair<std::string, std::string>> extra_env;
  // Reads ConfigMaps and Secrets for env references, envFrom and volumes. Unset: none exist.
  ObjectLookup lookup;
  // Absolute; volumes are materialized at their literal mountPath, which must lie under it.
  // "" = nowhere: a container with configMap, secret or emptyDir mounts cannot be configured.
  std::string host_volume_root;
};

struct LaunchSpec {
  std::string container;  // the container's name
  std::string image;
  std::vector<std::string> argv;                         // argv[0] as written, not resolved
  std::vector<std::pair<std::string, std::string>> env;  // in definition order
  std::string working_dir;                               // "" = the agent's
  std::vector<MountSpec> mounts;  // to materialize (MaterializeMount) before each start
};

// The container the agent runs: the one named `autodist-runtime` if there is one (the sidecar
// the operator injects), else the first. Throws autodist::Error (kInvalidArgument) when the pod
// has no containers.
const nlohmann::json& SelectContainer(const nlohmann::json& pod);

// The launch of the selected container. Throws autodist::Error (kInvalidArgument) naming the
// field when the container cannot be run here: no command and no known entrypoint for its image,
// an env entry the agent cannot resolve (resourceFieldRef is not served; a ConfigMap, Secret or
// key that a configMapKeyRef, secretKeyRef or envFrom names is missing and not optional), an
// unsupported fieldRef path, or a volume mount PlanMounts rejects. Optional references to
// missing objects or keys leave the variable unset, as the kubelet does.
LaunchSpec MakeLaunchSpec(const nlohmann::json& pod, const LaunchContext& context);

// Kubernetes' $(VAR) expansion (k8s.io/kubernetes third_party/forked/golang/expansion): $(NAME)
// becomes the value of NAME when `vars` has it and stays as written otherwise; $$ is a literal $.
std::string ExpandVars(const std::string& input, const std::map<std::string, std::string>& vars);

// The downward API value of `field_path` for `pod` (metadata.name, metadata.namespace,
// metadata.uid, metadata.labels['k'], metadata.annotations['k'], spec.nodeName,
// spec.serviceAccountName, status.podIP, status.hostIP). Throws autodist::Error
// (kInvalidArgument) for other paths.
std::string FieldRefValue(const nlohmann::json& pod, const std::string& field_path,
                          const LaunchContext& context);

// context.lookup(resource, ns, name), or null without a lookup.
nlohmann::json LookupObject(const LaunchContext& context, const std::string& resource,
                            const std::string& ns, const std::string& name);

}  // namespace autodist::k8s
