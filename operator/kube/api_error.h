// Failed API calls. The one subclass of autodist::Error in the codebase (docs/errors.md says
// why): the operator must branch on what the API server answered (409 → re-read and retry,
// 404 → create, 410 → relist, 429/5xx → back off), and an ErrorCode cannot tell those apart.
#pragma once

#include <exception>
#include <string>

#include "runtime/common/error.h"

namespace autodist::kube {

// The metav1.Status of a failed call (or what the client made of a body that was not one).
struct ApiStatus {
  int code = 0;                 // HTTP status
  std::string reason;           // metav1.StatusReason: NotFound, Conflict, AlreadyExists, Gone,
                                // Expired, TooManyRequests, Invalid, ...
  std::string message;          // the server's message
  int retry_after_seconds = 0;  // Retry-After (429, 503) or details.retryAfterSeconds
};

class ApiError : public Error {
 public:
  // `what` names the call, e.g. "GET /api/v1/namespaces/default/pods/x".
  ApiError(const std::string& what, ApiStatus status);

  const ApiStatus& status() const { return status_; }
  int http_code() const { return status_.code; }
  const std::string& reason() const { return status_.reason; }

 private:
  ApiStatus status_;
};

// The ErrorCode an HTTP status maps to: 400/422 kInvalidArgument, 404 kNotFound, 401/403/409/410
// kFailedPrecondition, 429 and 5xx kUnavailable.
ErrorCode ErrorCodeForHttp(int code);

// Predicates in the style of apimachinery's errors.IsNotFound: false for anything that is not
// an ApiError.
bool IsNotFound(const std::exception& e);
bool IsConflict(const std::exception& e);       // 409 on a write (resourceVersion mismatch)
bool IsAlreadyExists(const std::exception& e);  // 409 on create
bool IsGone(const std::exception& e);           // 410: resourceVersion too old, relist
bool IsTooManyRequests(const std::exception& e);
// Worth retrying after a pause: 429, 5xx, 409 Conflict on update, and a transport failure
// (an autodist::Error with kUnavailable).
bool IsRetryable(const std::exception& e);

}  // namespace autodist::kube
