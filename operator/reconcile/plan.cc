#include "operator/reconcile/plan.h"

namespace autodist::reconcile {

bool Plan::HasActions() const {
  return status.has_value() || !deletes.empty() || !creates.empty() || delete_job ||
         !events.empty();
}

void Plan::RequeueAfter(std::chrono::seconds after) {
  if (!requeue_after.has_value() || after < *requeue_after) requeue_after = after;
}

}  // namespace autodist::reconcile
