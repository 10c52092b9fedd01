#include "tests/k8s/api_error.h"

namespace autodist::k8s {

ErrorCode ApiError::CodeFor(int http_code) {
  // Clients retry 429 and 5xx; 404 names a missing resource; other 4xx are the caller's input or
  // the object's state (conflicts, expired resource versions).
  if (http_code == 404) return ErrorCode::kNotFound;
  if (http_code == 400 || http_code == 422 || http_code == 415) return ErrorCode::kInvalidArgument;
  if (http_code == 429 || http_code >= 500) return ErrorCode::kUnavailable;
  return ErrorCode::kFailedPrecondition;
}

nlohmann::json ApiError::ToStatus() const {
  return FailureStatus(http_code_, reason_, what(), details_);
}

nlohmann::json FailureStatus(int http_code, const std::string& reason, const std::string& message,
                             const nlohmann::json& details) {
  nlohmann::json status = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", http_code}};
  if (!details.is_null()) status["details"] = details;
  return status;
}

}  // namespace autodist::k8s
