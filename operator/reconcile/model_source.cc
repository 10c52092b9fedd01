#include "operator/reconcile/model_source.h"

#include <filesystem>

#include "runtime/common/base64.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::reconcile {
namespace {

std::optional<std::string> ConfigMapValue(const nlohmann::json& config_map, const char* field,
                                          const std::string& key) {
  const auto section = config_map.find(field);
  if (section == config_map.end() || !section->is_object()) return std::nullopt;
  const auto value = section->find(key);
  if (value == section->end() || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

}  // namespace

std::optional<std::string> ModelSource::ReadFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  return ReadFileBytes(path, "model");
}

std::string FetchModel(const job::JobSpec& job, const std::string& namespace_name,
                       ModelSource& source) {
  if (!job.model.config_map.has_value()) {
    std::optional<std::string> bytes = source.ReadFile(job.model.path);
    AD_CHECK(bytes.has_value(), kNotFound,
             "spec.model.path: model '{}' does not exist where the operator reads it",
             job.model.path);
    return std::move(*bytes);
  }
  const job::ConfigMapRef& ref = *job.model.config_map;
  const std::optional<nlohmann::json> config_map = source.GetConfigMap(namespace_name, ref.name);
  AD_CHECK(config_map.has_value(), kNotFound,
           "spec.model.configMap: ConfigMap {}/{} does not exist", namespace_name, ref.name);
  if (const auto encoded = ConfigMapValue(*config_map, "binaryData", ref.key)) {
    std::optional<std::string> bytes = DecodeBase64(*encoded);
    AD_CHECK(bytes.has_value(), kInvalidArgument,
             "spec.model.configMap: binaryData[\"{}\"] of ConfigMap {}/{} is not base64", ref.key,
             namespace_name, ref.name);
    return std::move(*bytes);
  }
  if (auto text = ConfigMapValue(*config_map, "data", ref.key)) return std::move(*text);
  Fail(ErrorCode::kNotFound,
       "spec.model.configMap: ConfigMap {}/{} has no key \"{}\" in binaryData or data",
       namespace_name, ref.name, ref.key);
}

}  // namespace autodist::reconcile
