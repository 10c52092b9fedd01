#include "tests/k8s/volumes.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "runtime/common/error.h"
#include "tests/k8s/base64.h"
#include "tests/k8s/launch_spec.h"

namespace autodist::k8s {
namespace {

namespace fs = std::filesystem;

// "/a/b/../c/" -> "/a/c"; "x/./y/" -> "x/y".
std::string Normal(const std::string& path) {
  fs::path normal = fs::path(path).lexically_normal();
  if (!normal.has_filename() && normal.has_relative_path()) normal = normal.parent_path();
  return normal.string();
}

// items[].path and subPath: relative, without "..", as the API server validates them.
std::string CheckRelative(const std::string& path, const std::string& what) {
  AD_CHECK(!path.empty() && path[0] != '/', kInvalidArgument, "{} '{}': must be a relative path",
           what, path);
  for (const auto& part : fs::path(path)) {
    AD_CHECK(part != "..", kInvalidArgument, "{} '{}': must not contain '..'", what, path);
  }
  return Normal(path);
}

int Mode(const nlohmann::json& source, const char* field, int fallback) {
  const auto it = source.find(field);
  return it != source.end() && it->is_number_integer() ? it->get<int>() & 07777 : fallback;
}

std::string Text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// The files of a configMap or secret volume source, keys (or items) to contents.
std::vector<VolumeFile> SourceFiles(const nlohmann::json& source, bool secret,
                                    const std::string& ns, const LaunchContext& context,
                                    const std::string& at) {
  const std::string kind = secret ? "secret" : "configmap";
  const std::string name = source.value(secret ? "secretName" : "name", "");
  const bool optional = source.value("optional", false);
  const int default_mode = Mode(source, "defaultMode", 0644);
  const nlohmann::json object = LookupObject(context, secret ? "secrets" : "configmaps", ns, name);
  if (object.is_null()) {
    if (optional) return {};
    Fail(ErrorCode::kInvalidArgument, "{}: {} \"{}\" not found", at, kind, name);
  }
  std::map<std::string, std::string> payload;
  const nlohmann::json data = object.value("data", nlohmann::json::object());
  for (const auto& [key, value] : data.items()) {
    payload[key] = secret ? Base64Decode(Text(value)) : Text(value);
  }
  if (!secret) {
    const nlohmann::json binary = object.value("binaryData", nlohmann::json::object());
    for (const auto& [key, value] : binary.items()) {
      payload[key] = Base64Decode(Text(value));
    }
  }
  std::vector<VolumeFile> files;
  const auto items = source.value("items", nlohmann::json::array());
  if (!items.is_array() || items.empty()) {
    for (const auto& [key, content] : payload) files.push_back({key, content, default_mode});
    return files;
  }
  for (const auto& item : items) {
    const std::string key = item.value("key", "");
    auto it = payload.find(key);
    if (it == payload.end()) {
      if (optional) continue;
      Fail(ErrorCode::kInvalidArgument, "{}: {} \"{}\": {} references non-existent {} key: {}", at,
           kind, name, kind, secret ? "secret" : "config", key);
    }
    files.push_back({CheckRelative(item.value("path", ""), at + ": items[].path"), it->second,
                     Mode(item, "mode", default_mode)});
  }
  return files;
}

void WriteAtomically(const fs::path& path, const std::string& content, int mode) {
  fs::create_directories(path.parent_path());
  std::string tmp =
      (path.parent_path() / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  AD_CHECK(fd >= 0, kFailedPrecondition, "cannot create a temporary file next to '{}': {}",
           path.string(), std::strerror(errno));
  size_t done = 0;
  int error = 0;
  while (done < content.size() && error == 0) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno != EINTR) error = errno;
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (error == 0 && ::fchmod(fd, static_cast<mode_t>(mode)) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    Fail(ErrorCode::kFailedPrecondition, "cannot write '{}': {}", path.string(),
         std::strerror(error));
  }
}

}  // namespace

bool PathIsUnder(const std::string& path, const std::string& root) {
  const fs::path p = fs::path(path).lexically_normal();
  const fs::path r = fs::path(root).lexically_normal();
  if (!p.is_absolute() || !r.is_absolute()) return false;
  const auto parts = [](const fs::path& from) {
    std::vector<std::string> out;
    for (const auto& part : from) {
      if (!part.empty()) out.push_back(part.string());
    }
    return out;
  };
  const auto path_parts = parts(p);
  const auto root_parts = parts(r);
  return path_parts.size() > root_parts.size() &&
         std::equal(root_parts.begin(), root_parts.end(), path_parts.begin());
}

std::vector<MountSpec> PlanMounts(const nlohmann::json& pod, const nlohmann::json& container,
                                  const LaunchContext& context, const std::string& where) {
  std::vector<MountSpec> out;
  const auto mounts = container.value("volumeMounts", nlohmann::json::array());
  if (!mounts.is_array() || mounts.empty()) return out;
  const std::string ns =
      pod.value("metadata", nlohmann::json::object()).value("namespace", "default");
  const auto volumes =
      pod.value("spec", nlohmann::json::object()).value("volumes", nlohmann::json::array());
  for (const auto& m : mounts) {
    const std::string name = m.value("name", "");
    const std::string mount_path = m.value("mountPath", "");
    const std::string at = where + ": volumeMount '" + name + "' at '" + mount_path + "'";
    const nlohmann::json* volume = nullptr;
    for (const auto& v : volumes) {
      if (v.is_object() && v.value("name", "") == name) volume = &v;
    }
    AD_CHECK(volume != nullptr, kInvalidArgument, "{}: no volume '{}' in spec.volumes", at, name);
    std::string type;
    for (const auto& [field, value] : volume->items()) {
      if (field != "name") type = field;
    }
    AD_CHECK(type == "configMap" || type == "secret" || type == "emptyDir", kInvalidArgument,
             "{}: volume '{}' is of type '{}'; the node agent serves configMap, secret and "
             "emptyDir volumes only",
             at, name, type);
    AD_CHECK(!context.host_volume_root.empty(), kInvalidArgument,
             "{}: the node agent has no host volume root (host_volume_root, --host-volume-root); "
             "every pod is a local process, so a volume is materialized at its literal mountPath "
             "on the host, which must lie under that root",
             at);
    AD_CHECK(!mount_path.empty() && mount_path[0] == '/', kInvalidArgument,
             "{}: mountPath must be an absolute path", at);
    AD_CHECK(PathIsUnder(mount_path, context.host_volume_root), kInvalidArgument,
             "{}: the mountPath is outside the node agent's host volume root '{}'; every pod is "
             "a local process, so a volume is materialized at its literal mountPath on the host, "
             "which must lie under that root",
             at, context.host_volume_root);

    MountSpec spec;
    spec.volume = name;
    spec.type = type;
    spec.mount_path = Normal(mount_path);
    if (type != "emptyDir") {
      spec.files = SourceFiles((*volume)[type], type == "secret", ns, context, at);
    }
    const std::string sub_path = m.value("subPath", "");
    if (!sub_path.empty() && type != "emptyDir") {
      // One file of the volume, or the part of it under a directory.
      const std::string sub = CheckRelative(sub_path, at + ": subPath");
      std::vector<VolumeFile> files;
      for (auto& f : spec.files) {
        if (f.path == sub) {
          spec.single_file = true;
          files = {{"", f.content, f.mode}};
          break;
        }
        if (f.path.starts_with(sub + "/")) {
          files.push_back({f.path.substr(sub.size() + 1), f.content, f.mode});
        }
      }
      spec.files = std::move(files);
    } else if (!sub_path.empty()) {
      CheckRelative(sub_path, at + ": subPath");
    }
    out.push_back(std::move(spec));
  }
  return out;
}

void MaterializeMount(const MountSpec& mount, std::set<std::string>& written) {
  const fs::path base(mount.mount_path);
  if (mount.type == "emptyDir") {
    fs::create_directories(base);
    return;
  }
  if (mount.single_file) {
    WriteAtomically(base, mount.files.at(0).content, mount.files.at(0).mode);
    written.clear();
    return;
  }
  fs::create_directories(base);
  std::set<std::string> now;
  for (const auto& f : mount.files) {
    WriteAtomically(base / f.path, f.content, f.mode);
    now.insert(f.path);
  }
  for (const auto& old : written) {
    std::error_code ec;
    if (!now.contains(old)) fs::remove(base / old, ec);
  }
  written = std::move(now);
}

}  // namespace autodist::k8s
