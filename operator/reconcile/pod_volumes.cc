#include "operator/reconcile/pod_volumes.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace autodist::reconcile {
namespace {

namespace fs = std::filesystem;

std::string Normal(const std::string& path) { return fs::path(path).lexically_normal().string(); }

// Whether `path` is `mount` or lies under it ("/ckpt/run1" under "/ckpt", not "/ckpt2").
bool Covers(const std::string& mount, const std::string& path) {
  const fs::path relative =
      fs::path(path).lexically_normal().lexically_relative(fs::path(mount).lexically_normal());
  return !relative.empty() && *relative.begin() != "..";
}

bool Covered(const nlohmann::json& mounts, const std::string& path) {
  return std::ranges::any_of(mounts, [&path](const nlohmann::json& mount) {
    return Covers(mount.value("mountPath", ""), path);
  });
}

nlohmann::json* FindContainer(nlohmann::json& pod_spec, const std::string& name) {
  for (nlohmann::json& container : pod_spec["containers"]) {
    if (container.value("name", "") == name) return &container;
  }
  return nullptr;
}

void AddEmptyDir(nlohmann::json& pod_spec, nlohmann::json& container, const std::string& name,
                 const std::string& path, bool in_memory, const std::string& size_limit = "") {
  nlohmann::json empty_dir = nlohmann::json::object();
  if (in_memory) empty_dir["medium"] = "Memory";
  if (!size_limit.empty()) empty_dir["sizeLimit"] = size_limit;
  pod_spec["volumes"].push_back({{"name", name}, {"emptyDir", std::move(empty_dir)}});
  container["volumeMounts"].push_back({{"name", name}, {"mountPath", path}});
}

}  // namespace

std::vector<OutputDirectory> OutputDirectories(const job::JobSpec& job) {
  std::vector<OutputDirectory> directories;
  const job::TrainingSpec& training = job.training;
  if (training.checkpoint.has_value()) {
    directories.push_back({"spec.training.checkpoint.path", Normal(training.checkpoint->path)});
  }
  if (!training.timeline_path.empty()) {
    directories.push_back({"spec.training.timeline.path", Normal(training.timeline_path)});
  }
  if (!training.tensorboard_path.empty()) {
    directories.push_back({"spec.training.tensorboard.path", Normal(training.tensorboard_path)});
  }
  if (!training.export_path.empty()) {
    directories.push_back({"spec.training.exportPath",
                           fs::path(Normal(training.export_path)).parent_path().string()});
  }
  return directories;
}

std::vector<OutputDirectory> AddWritableVolumes(nlohmann::json& pod_spec,
                                                const std::string& container_name,
                                                const job::JobSpec& job,
                                                const ReconcilerOptions& options) {
  nlohmann::json* container = FindContainer(pod_spec, container_name);
  std::vector<OutputDirectory> ephemeral;
  if (container == nullptr) return ephemeral;
  if (!container->contains("volumeMounts")) (*container)["volumeMounts"] = nlohmann::json::array();
  if (!pod_spec.contains("volumes")) pod_spec["volumes"] = nlohmann::json::array();
  if (!options.tmp_mount_path.empty() &&
      !Covered((*container)["volumeMounts"], options.tmp_mount_path)) {
    AddEmptyDir(pod_spec, *container, "autodist-tmp", options.tmp_mount_path, false);
  }
  if (!options.shm_mount_path.empty() &&
      !Covered((*container)["volumeMounts"], options.shm_mount_path)) {
    AddEmptyDir(pod_spec, *container, "autodist-shm", options.shm_mount_path, true,
                job.resources.shared_memory);
  }
  int index = 0;
  for (const OutputDirectory& directory : OutputDirectories(job)) {
    if (Covered((*container)["volumeMounts"], directory.path)) continue;
    AddEmptyDir(pod_spec, *container, fmt::format("autodist-output-{}", index++), directory.path,
                false);
    ephemeral.push_back(directory);
  }
  return ephemeral;
}

}  // namespace autodist::reconcile
