// Where the operator reads a job's model from, to compile its Strategy: the file at
// spec.model.path, or the key of the ConfigMap named by spec.model.configMap. The controller
// implements GetConfigMap with its API client; tests implement it with a map.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "runtime/job/job_spec.h"

namespace autodist::reconcile {

class ModelSource {
 public:
  virtual ~ModelSource() = default;

  // The ConfigMap as the API returns it, or nullopt when it does not exist. Throws
  // autodist::Error (kUnavailable) when the API cannot be reached, so the reconcile is retried.
  virtual std::optional<nlohmann::json> GetConfigMap(const std::string& namespace_name,
                                                     const std::string& name) = 0;

  // The bytes of the file at `path` as the operator sees it, or nullopt when there is none.
  // Default: the operator's own filesystem.
  virtual std::optional<std::string> ReadFile(const std::string& path);
};

// The bytes of `job`'s model (an ONNX model or a serialized GraphItem): the file, or the
// ConfigMap key (binaryData, base64-decoded, else data). Throws NotFound naming the file or the
// ConfigMap and key when absent; InvalidArgument when binaryData is not base64.
std::string FetchModel(const job::JobSpec& job, const std::string& namespace_name,
                       ModelSource& source);

// The text of `job`'s step profile (spec.strategy.profile: the file or the ConfigMap key), or
// nullopt when the manifest names none. Throws as FetchModel does, naming
// spec.strategy.profile.
std::optional<std::string> FetchProfile(const job::JobSpec& job, const std::string& namespace_name,
                                        ModelSource& source);

}  // namespace autodist::reconcile
