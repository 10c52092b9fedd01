// A child the API server refused to create: validation (422), admission (a webhook, Pod Security
// Admission, a LimitRange), quota or authorization (403), or its name held by an object the job
// does not control (409 AlreadyExists: an earlier job's child the garbage collector has not
// removed yet, or someone else's). Retrying the same request changes nothing, so the controller
// hands the refusal to the next reconcile, which turns it into the job's status instead of
// retrying in silence (docs/operator-reconcile.md, "Rejected children").
#pragma once

#include <string>

namespace autodist::reconcile {

struct Rejection {
  std::string kind;  // Pod, ConfigMap, Service, PodGroup
  std::string name;
  int code = 0;         // the HTTP status
  std::string reason;   // metav1.StatusReason: Forbidden, Invalid, ...
  std::string message;  // the server's, verbatim
  // The refusal can clear without anyone changing the job: the job waits (Running False,
  // FailedCreate) instead of failing.
  bool may_clear = false;

  bool operator==(const Rejection&) const = default;
};

// True for the answers to a create that are the request's own fault, not the server's or the
// connection's: 400, 403, 413, 415 and 422. Not 401 (the operator's credentials, which a token
// rotation fixes), 404, 408, 409 (handled as AlreadyExists or a conflict) or 429 (throttling).
bool IsRejectionCode(int code);

// True when an API server's refusal (`code`, `message`) can clear without anyone changing the
// job: a ResourceQuota that is used up ("exceeded quota") admits the pods once others end. A
// quota that requires limits the pods lack ("must specify"), or any other refusal, stays until
// the job is changed.
bool RefusalMayClear(int code, const std::string& message);

// "the API server refused to create Pod x (403 Forbidden): <message>".
std::string DescribeRejection(const Rejection& rejection);

}  // namespace autodist::reconcile
