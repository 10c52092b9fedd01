#include "operator/kube/api_error.h"

#include <fmt/format.h>

namespace autodist::kube {
namespace {

std::string Message(const std::string& what, const ApiStatus& s) {
  std::string text = fmt::format("{}: {} {}", what, s.code, s.reason.empty() ? "" : s.reason);
  while (text.ends_with(' ')) text.pop_back();
  if (!s.message.empty()) text += ": " + s.message;
  return text;
}

const ApiError* AsApiError(const std::exception& e) { return dynamic_cast<const ApiError*>(&e); }

}  // namespace

ApiError::ApiError(const std::string& what, ApiStatus status)
    : Error(ErrorCodeForHttp(status.code), Message(what, status)), status_(std::move(status)) {}

ErrorCode ErrorCodeForHttp(int code) {
  switch (code) {
    case 400:
    case 422:
      return ErrorCode::kInvalidArgument;
    case 404:
      return ErrorCode::kNotFound;
    case 401:
    case 403:
    case 409:
    case 410:
      return ErrorCode::kFailedPrecondition;
    default:
      return ErrorCode::kUnavailable;
  }
}

bool IsNotFound(const std::exception& e) {
  const auto* api = AsApiError(e);
  return api != nullptr && api->http_code() == 404;
}

bool IsConflict(const std::exception& e) {
  const auto* api = AsApiError(e);
  return api != nullptr && api->http_code() == 409 && api->reason() != "AlreadyExists";
}

bool IsAlreadyExists(const std::exception& e) {
  const auto* api = AsApiError(e);
  return api != nullptr && api->http_code() == 409 && api->reason() == "AlreadyExists";
}

bool IsGone(const std::exception& e) {
  const auto* api = AsApiError(e);
  return api != nullptr && api->http_code() == 410;
}

bool IsTooManyRequests(const std::exception& e) {
  const auto* api = AsApiError(e);
  return api != nullptr && api->http_code() == 429;
}

bool IsRetryable(const std::exception& e) {
  if (const auto* api = AsApiError(e)) {
    return api->http_code() == 429 || api->http_code() >= 500 || IsConflict(e);
  }
  const auto* error = dynamic_cast<const Error*>(&e);
  return error != nullptr && error->code() == ErrorCode::kUnavailable;
}

}  // namespace autodist::kube
