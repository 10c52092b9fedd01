#include "operator/reconcile/model_source.h"

#include <filesystem>

#include "runtime/common/base64.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::reconcile {

std::optional<std::string> ModelSource::ReadFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  return ReadFileBytes(path, "file");
}

namespace {

std::optional<std::string> ConfigMapValue(const nlohmann::json& config_map, const char* field,
                                          const std::string& key) {
  const auto section = config_map.find(field);
  if (section == config_map.end() || !section->is_object()) return std::nullopt;
  const auto value = section->find(key);
  if (value == section->end() || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

// The bytes of `file` (when `ref` is unset) or of `ref`'s key, for the manifest field `field`
// ("spec.model"), `what` the thing it names ("model").
std::string Fetch(const std::string& file, const std::optional<job::ConfigMapRef>& ref,
                  const std::string& namespace_name, ModelSource& source, const char* field,
                  const char* what) {
  if (!ref.has_value()) {
    std::optional<std::string> bytes = source.ReadFile(file);
    AD_CHECK(bytes.has_value(), kNotFound,
             "{}.path: {} '{}' does not exist where the operator reads it", field, what, file);
    return std::move(*bytes);
  }
  const std::optional<nlohmann::json> config_map = source.GetConfigMap(namespace_name, ref->name);
  AD_CHECK(config_map.has_value(), kNotFound, "{}.configMap: ConfigMap {}/{} does not exist", field,
           namespace_name, ref->name);
  if (const auto encoded = ConfigMapValue(*config_map, "binaryData", ref->key)) {
    std::optional<std::string> bytes = DecodeBase64(*encoded);
    AD_CHECK(bytes.has_value(), kInvalidArgument,
             "{}.configMap: binaryData[\"{}\"] of ConfigMap {}/{} is not base64", field, ref->key,
             namespace_name, ref->name);
    return std::move(*bytes);
  }
  if (auto text = ConfigMapValue(*config_map, "data", ref->key)) return std::move(*text);
  Fail(ErrorCode::kNotFound,
       "{}.configMap: ConfigMap {}/{} has no key \"{}\" in binaryData or data", field,
       namespace_name, ref->name, ref->key);
}

}  // namespace

std::string FetchModel(const job::JobSpec& job, const std::string& namespace_name,
                       ModelSource& source) {
  return Fetch(job.model.path, job.model.config_map, namespace_name, source, "spec.model", "model");
}

std::optional<std::string> FetchProfile(const job::JobSpec& job, const std::string& namespace_name,
                                        ModelSource& source) {
  if (!job.strategy.profile.has_value()) return std::nullopt;
  return Fetch(job.strategy.profile->path, job.strategy.profile->config_map, namespace_name, source,
               "spec.strategy.profile", "step profile");
}

}  // namespace autodist::reconcile
