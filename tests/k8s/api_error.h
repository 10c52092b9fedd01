// API-level failures of the Kubernetes API-server test double. A failed API call is answered
// with a metav1.Status object (code, reason, message, details), so the error carries those
// fields; it derives from autodist::Error (docs/errors.md) so one catch of autodist::Error still
// sees every failure, and the HTTP boundary (api_server.cc) turns it into the Status body.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::k8s {

class ApiError : public Error {
 public:
  ApiError(int http_code, std::string reason, std::string message, nlohmann::json details)
      : Error(CodeFor(http_code), std::move(message)),
        http_code_(http_code),
        reason_(std::move(reason)),
        details_(std::move(details)) {}

  int http_code() const { return http_code_; }
  const std::string& reason() const { return reason_; }
  const nlohmann::json& details() const { return details_; }

  // The metav1.Status object the API server answers with.
  nlohmann::json ToStatus() const;

 private:
  static ErrorCode CodeFor(int http_code);

  int http_code_;
  std::string reason_;
  nlohmann::json details_;
};

// metav1.Status for a failure; `details` may be null.
nlohmann::json FailureStatus(int http_code, const std::string& reason, const std::string& message,
                             const nlohmann::json& details = nullptr);

// Throws ApiError(code, reason, formatted message) with no details.
template <typename... Args>
[[noreturn]] void FailApi(int http_code, const char* reason, fmt::format_string<Args...> format,
                          Args&&... args) {
  throw ApiError(http_code, reason, fmt::format(format, std::forward<Args>(args)...), nullptr);
}

}  // namespace autodist::k8s
