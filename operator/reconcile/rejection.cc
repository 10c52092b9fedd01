#include "operator/reconcile/rejection.h"

#include <fmt/format.h>

namespace autodist::reconcile {

bool IsRejectionCode(int code) {
  return code == 400 || code == 403 || code == 413 || code == 415 || code == 422;
}

bool RefusalMayClear(int code, const std::string& message) {
  // The quota admission plugin's wording: "exceeded quota: <name>, requested: ..., used: ...,
  // limited: ..." while the quota is used up; "failed quota: <name>: must specify limits.cpu"
  // when the pod lacks what the quota requires, which no waiting fixes.
  return code == 403 && message.find("exceeded quota") != std::string::npos;
}

std::string DescribeRejection(const Rejection& rejection) {
  return fmt::format("the API server refused to create {} {} ({}{}{}): {}", rejection.kind,
                     rejection.name, rejection.code, rejection.reason.empty() ? "" : " ",
                     rejection.reason, rejection.message);
}

}  // namespace autodist::reconcile
