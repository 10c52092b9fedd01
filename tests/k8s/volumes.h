// The volumes of the container the node agent runs. Every pod is a local process on the host, so
// configMap, secret and emptyDir volumes are materialized at their container's LITERAL mountPath
// on the host, and only under the agent's host volume root (NodeAgentOptions::host_volume_root,
// `--host-volume-root`): a mount anywhere else (or with no root) cannot be configured. Pods that
// mount at the same path share the files, so the operator under test should put the job in the
// path (docs/testing.md, "Volumes and env references").
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace autodist::k8s {

struct LaunchContext;

struct VolumeFile {
  std::string path;  // relative to the mount path: the key, or items[].path; "" = the mount
  std::string content;
  int mode = 0644;
};

struct MountSpec {
  std::string volume;        // volumes[].name
  std::string type;          // "configMap", "secret" or "emptyDir"
  std::string mount_path;    // absolute, lexically normal, under the host volume root
  bool single_file = false;  // a subPath naming one file of a configMap/secret: mount_path is it
  std::vector<VolumeFile> files;  // configMap and secret volumes: what the mount holds
};

// The mounts of `container` (volumeMounts[], in order) with the content of their volumes read
// through context.lookup. Throws autodist::Error (kInvalidArgument), prefixed with `where`, when a
// mount cannot be configured: no host volume root or a mountPath outside it, a volume the pod
// does not declare or of a type the agent does not serve (it serves configMap, secret,
// emptyDir), a missing ConfigMap or Secret or key that is not optional, a bad items[].path.
std::vector<MountSpec> PlanMounts(const nlohmann::json& pod, const nlohmann::json& container,
                                  const LaunchContext& context, const std::string& where);

// Puts `mount` on the host: emptyDir creates the directory (what is in it stays, as an emptyDir
// survives container restarts); configMap and secret write each file atomically (a temporary file
// in the same directory, then rename) with its mode, creating directories as needed. `written`
// holds the files this mount path got from the previous call and is updated: files no longer in
// the volume are removed (a key deleted from the ConfigMap disappears, as with a kubelet). Throws
// autodist::Error (kFailedPrecondition) or std::filesystem::filesystem_error on I/O failures.
void MaterializeMount(const MountSpec& mount, std::set<std::string>& written);

// Whether `path` lies strictly inside `root` (both absolute; compared lexically after
// normalization, so "/r/a/../../etc" is not inside "/r").
bool PathIsUnder(const std::string& path, const std::string& root);

}  // namespace autodist::k8s
